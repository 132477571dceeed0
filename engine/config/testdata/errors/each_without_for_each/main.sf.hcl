node "a" {
  transport = "local"
}

resource "kmod_module" "x" {
  node = node.a
  name = each.key
}
