resource "data" "x" {
  node = node.a
}
