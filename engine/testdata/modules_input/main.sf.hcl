# A root resource per stack, and a module instance per stack that takes
# its own one as an input (base[each.key]); var.fail fails one base.
variable "fail" {
  type    = map(string)
  default = {}
}

node "local" {
  transport = "local"
}

resource "sftest_thing" "base" {
  for_each = toset(["s1", "s2"])
  node     = node.local
  value    = each.key
  fail     = lookup(var.fail, each.key, "")
}

module "stack" {
  source   = "../modules/stack"
  for_each = toset(["s1", "s2"])
  host     = node.local
  name     = sftest_thing.base[each.key].id
  fail     = {}
}
