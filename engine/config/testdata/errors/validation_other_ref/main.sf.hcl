locals {
  max = 6
}

variable "cpus" {
  type = number
  validation {
    condition     = var.cpus <= local.max
    error_message = "Too many CPUs."
  }
}
