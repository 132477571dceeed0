# a and b read each other's id: no order exists.
node "local" {
  transport = "local"
}

resource "sftest_thing" "a" {
  node  = node.local
  value = sftest_thing.b.id
}

resource "sftest_thing" "b" {
  node  = node.local
  value = local.a_id
}

locals {
  a_id = sftest_thing.a.id
}
