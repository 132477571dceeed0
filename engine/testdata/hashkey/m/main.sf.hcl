variable "host" {}
variable "tag" {}

resource "sftest_thing" "t" {
  for_each = toset(["a#b", "c"])
  node     = var.host
  value    = "${var.tag}/${each.key}"
}
