# Refresh cost: two providers on two nodes, N instances each.
# sparkform_data and sftest_thing never dial their node, so the ssh nodes
# need no server; they only have to be two different nodes.
variable "n" {
  type    = number
  default = 10
}

node "n" {
  for_each = { a = "127.0.0.2", b = "127.0.0.3" }
  host     = each.value
  user     = "bench"
}

resource "sparkform_data" "a" {
  count = var.n
  node  = node.n["a"]
  input = "a${count.index}"
}

resource "sparkform_data" "b" {
  count = var.n
  node  = node.n["b"]
  input = sparkform_data.a[count.index].id
}

resource "sftest_thing" "a" {
  count = var.n
  node  = node.n["a"]
  value = "a${count.index}"
}

resource "sftest_thing" "b" {
  count = var.n
  node  = node.n["b"]
  value = sftest_thing.a[count.index].id
}
