variable "token" {}

output "token" {
  # holds a sensitive value but does not say so
  value = upper(var.token)
}
