# Thirty instances of one provider applied at once (they share the
# provider's apply session, several to a message); var.fail makes k07 fail.
variable "fail" {
  type    = string
  default = ""
}

node "local" {
  transport = "local"
}

resource "sftest_thing" "many" {
  for_each = toset([for i in range(30) : format("k%02d", i)])
  node     = node.local
  value    = "v-${each.key}"
  fail     = each.key == "k07" ? var.fail : ""
}
