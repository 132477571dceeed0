node "a" {
  transport = "local"
}

resource "kmod_module" "x" {
  for_each = toset(["a"])
  count    = 2
  node     = node.a
}
