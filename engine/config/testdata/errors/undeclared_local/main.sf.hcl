locals {
  image = "busybox"
}

output "image" {
  value = local.imag
}
