variable "tok" {
  default   = "hunter2"
  sensitive = true
}

module "m" {
  source = "./m"
  token  = var.tok
}

resource "sparkform_data" "x" {
  input = module.m.token
}
