# A module used many times whose resource the provider refuses: the
# problem is in the module's one block, whatever the instance.
node "local" {
  transport = "local"
}

module "m" {
  source   = "./m"
  for_each = toset([for i in range(30) : "k${i}"])
  host     = node.local
  tag      = each.key
}

resource "sftest_thing" "root" {
  node  = node.local
  value = "root"
  fail  = "explode"
}
