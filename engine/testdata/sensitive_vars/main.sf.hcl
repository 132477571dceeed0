# A sensitive variable's mark, through locals, string templates, a
# module's input and output, resource arguments and references to the
# attributes set from it; nonsensitive() takes it off.
variable "tok" {
  default   = "hunter2"
  sensitive = true
}

variable "plain" {
  default = "shown"
}

locals {
  env    = { TOKEN = var.tok, X = "1" }
  bearer = "Bearer ${var.tok}"
  clear  = nonsensitive(var.tok)
}

module "m" {
  source = "./m"
  token  = var.tok
  label  = var.plain
}

resource "sparkform_data" "env" {
  input = { env = local.env, args = ["--serve", local.bearer] }
}

resource "sparkform_data" "ref" {
  input = { copied = sparkform_data.env.output.env.TOKEN, shown = sparkform_data.env.output.env.X }
}

resource "sparkform_data" "mod" {
  input = module.m.token
}

resource "sparkform_data" "clear" {
  input = local.clear
}

output "tok" {
  value     = module.m.token
  sensitive = true
}
