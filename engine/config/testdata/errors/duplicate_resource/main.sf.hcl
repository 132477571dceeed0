node "a" {
  transport = "local"
}

resource "kmod_module" "x" {
  node = node.a
}

resource "kmod_module" "x" {
  node = node.a
}
