node "spark" {
  transport = "local"
}

resource "kmod_module" "x" {
  node = node.sprak
}
