variable "cpus" {
  type    = number
  default = "six"
}
