# A node whose settings come from a variable through a local, and
# resources that use it: a destroy plan evaluates the node (and points
# state's objects at it) without decoding any resource body.
variable "timeout" {
  type = string
}

locals {
  timeout = var.timeout
}

node "local" {
  transport = "local"
  timeout   = local.timeout
}

resource "sftest_thing" "a" {
  count = 2
  node  = node.local
  value = "a${count.index}"
}

resource "sftest_thing" "b" {
  node  = node.local
  value = "${sftest_thing.a[0].id}-b"
}
