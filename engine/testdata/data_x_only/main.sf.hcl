# The data fixture with every block but x removed.
variable "input" {
  type    = string
  default = "one"
}
variable "trigger" {
  type    = string
  default = "t1"
}

node "local" {
  transport = "local"
}

resource "sparkform_data" "x" {
  node             = node.local
  input            = var.input
  triggers_replace = var.trigger
}
