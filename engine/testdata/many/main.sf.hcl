# Independent slow objects, for interruption.
variable "n" {
  type    = number
  default = 6
}

node "local" {
  transport = "local"
}

resource "sftest_thing" "slow" {
  count    = var.n
  node     = node.local
  value    = "s${count.index}"
  sleep_ms = 150
}
