node "spark" {
  count = 2
  host  = "10.0.0.${count.index}"
}

resource "kmod_module" "x" {
  node = node.spark["a"]
}
