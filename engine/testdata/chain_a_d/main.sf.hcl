# The chain fixture with b and c removed: they are orphans.
variable "value" {
  type    = string
  default = "v1"
}

node "local" {
  transport = "local"
}

resource "sftest_thing" "a" {
  node  = node.local
  value = var.value
  fail  = ""
}

resource "sftest_thing" "d" {
  node     = node.local
  value    = var.value
  fail     = ""
  sleep_ms = 0
}
