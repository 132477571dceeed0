variable "host" {}
variable "tag" {}

resource "sftest_thing" "bad" {
  node  = var.host
  value = var.tag
  fail  = "explode"
}

resource "sftest_thing" "good" {
  node  = var.host
  value = "${var.tag}-good"
}
