variable "host" {}
variable "name" {
  type = string
}
variable "fail" {
  type = map(string)
}

resource "sftest_thing" "first" {
  for_each = toset(["n1", "n2"])
  node     = var.host
  value    = "${var.name}-${each.key}"
  fail     = lookup(var.fail, "${var.name}/${each.key}", "")
}

resource "sftest_thing" "second" {
  for_each = toset(["n1", "n2"])
  node     = var.host
  value    = "${sftest_thing.first[each.key].id}-2"
}

output "seconds" {
  value = { for k, s in sftest_thing.second : k => s.value }
}
