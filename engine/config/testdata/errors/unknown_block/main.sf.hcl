resources "kmod_module" "x" {
  node = node.a
}
