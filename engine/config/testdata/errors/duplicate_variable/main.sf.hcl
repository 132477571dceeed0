variable "image" {}
variable "image" {
  default = "busybox"
}
