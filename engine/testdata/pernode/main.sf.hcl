# The same two-step stack on two "nodes": kit[k] then user[k], which takes
# only kit[k] (by its own key). var.fail makes kit["n1"] fail.
variable "fail" {
  type    = string
  default = ""
}

node "local" {
  transport = "local"
}

resource "sftest_thing" "kit" {
  for_each = toset(["n1", "n2"])
  node     = node.local
  value    = "kit-${each.key}"
  fail     = each.key == "n1" ? var.fail : ""
}

resource "sftest_thing" "user" {
  for_each = toset(["n1", "n2"])
  node     = node.local
  value    = "${sftest_thing.kit[each.key].id}-user"
}

# Takes every kit: waits for all of them.
resource "sftest_thing" "all" {
  node  = node.local
  value = join(",", [for k in sftest_thing.kit : k.id])
}
