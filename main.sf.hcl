node "local" {
  transport = "local"
}
resource "node_command" "w" {
  node    = node.local
  create  = ["true"]
  destroy = ["true"]
}
