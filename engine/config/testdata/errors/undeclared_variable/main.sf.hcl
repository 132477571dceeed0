variable "nodes" {
  default = {}
}

node "spark" {
  for_each = var.node
  host     = each.value.host
}
