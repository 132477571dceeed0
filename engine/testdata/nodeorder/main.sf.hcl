# Three SSH nodes the variables decide, each with one instance: the node
# check's order (PlanOptions.DialledAhead first).
variable "hosts" {
  default = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
}

node "n" {
  for_each = toset(var.hosts)
  host     = each.key
}

resource "sftest_thing" "t" {
  for_each = toset(var.hosts)
  node     = node.n[each.key]
  value    = each.key
}
