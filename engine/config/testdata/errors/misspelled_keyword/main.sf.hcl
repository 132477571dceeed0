variable "image" {
  default = "busybox"
}

output "image" {
  value = vars.image
}
