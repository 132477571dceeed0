variable "image" {
  default = "busybox:1.36"
}

variable "cpus" {
  type    = number
  default = 2
  validation {
    condition     = var.cpus >= 1 && var.cpus <= 6
    error_message = "The serving guard allows 1 to 6 CPUs."
  }
}

variable "devices" {
  type    = list(string)
  default = []
}

variable "nodes" {
  type = map(object({
    host = string
    rank = optional(number, 0)
  }))
}

variable "token" {
  type      = string
  sensitive = true
  default   = null
}
