variable "kit" {
  type = string
  validation {
    condition     = strlen(var.kit) > 0
    error_message = "The kit needs a name."
  }
}

locals {
  # "ive" is two edits from both "file" and "one": the first in name
  # order is offered, on every run.
  script = ive("prep.sh")
  names  = toset(["a", "b"])
}

node "spark" {
  host = "spark-1"
}

resource "sparkform_data" "kit" {
  for_each = tosett(local.names)
  node     = node.spark
  input    = upper(lowr(each.key))
}

output "kit" {
  value = provider::docker::image("busybox")
}
