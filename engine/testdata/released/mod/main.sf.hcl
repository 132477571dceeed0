variable "host" {}
variable "in" {}

resource "sftest_thing" "inner" {
  node  = var.host
  value = "${var.in}-inner"
}
