variable "v" {
  default = 1
}

node "a" {
  transport = "local"
}

resource "kmod_module" "x" {
  node       = node.a
  depends_on = [var.v]
}
