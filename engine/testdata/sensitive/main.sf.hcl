# A resource attribute set from sensitive(), and one that refers to it.
variable "tok" {
  type    = string
  default = "hunter2"
}

node "local" {
  transport = "local"
}

resource "sparkform_data" "a" {
  node  = node.local
  input = sensitive(var.tok)
}

resource "sparkform_data" "b" {
  node  = node.local
  input = sparkform_data.a.input
}

resource "sparkform_data" "plain" {
  node  = node.local
  input = "shown"
}
