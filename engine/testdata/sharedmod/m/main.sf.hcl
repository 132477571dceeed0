variable "seed" {}

resource "sparkform_data" "r" {
  input = var.seed
}

resource "sparkform_data" "s" {
  input = "${sparkform_data.r.output}!"
}

output "out" {
  value = sparkform_data.s.output
}
