# One local node, counted resources, a template, and lifecycle options.
variable "replicas" {
  type    = number
  default = 2
  validation {
    condition     = var.replicas >= 0
    error_message = "replicas cannot be negative."
  }
}

locals {
  base = "${path.module}/kits"
  unit = templatefile("${path.module}/unit.tmpl", { name = "demo" })
}

node "here" {
  transport = "local"
}
