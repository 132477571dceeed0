node "a" {
  transport = "local"
}

resource "kmod_module" "x" {
  node = node.a
  lifecycle {
    prevent_destory = true
  }
}
