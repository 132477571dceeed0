variable "token" {}

variable "label" {
  # sensitive inside the module, whatever the caller passes
  sensitive = true
}

resource "sparkform_data" "inner" {
  input = { t = var.token, l = var.label, k = "keep" }
}

output "token" {
  value     = var.token
  sensitive = true
}
