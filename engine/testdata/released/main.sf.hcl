# Root blocks (a, b, c and a counted one: their bodies go before a
# walk) and a module's block (its body stays). var.fail makes the
# test provider fail an operation of c, with a diagnostic naming its fail
# attribute.
variable "fail" {
  type    = string
  default = ""
}

node "local" {
  transport = "local"
}

resource "sftest_thing" "a" {
  node  = node.local
  value = "a"
}

resource "sftest_thing" "b" {
  node  = node.local
  value = "${sftest_thing.a.id}-b"
}

resource "sftest_thing" "c" {
  node  = node.local
  value = sftest_thing.b.value
  fail  = var.fail
}

resource "sftest_thing" "counted" {
  count = 2
  node  = node.local
  value = "${sftest_thing.a.id}-${count.index}"
}

module "m" {
  source = "./mod"
  host   = node.local
  in     = sftest_thing.c.value
}
