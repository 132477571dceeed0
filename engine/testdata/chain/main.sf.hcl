# A chain a <- b <- c (each reads the id of the one before) and d, which
# depends on nothing. var.fail makes the test provider fail an operation
# of one resource; var.sleep slows d down.
variable "fail" {
  type    = map(string)
  default = {}
}
variable "value" {
  type    = string
  default = "v1"
}
variable "sleep" {
  type    = number
  default = 0
}

node "local" {
  transport = "local"
}

resource "sftest_thing" "a" {
  node  = node.local
  value = var.value
  fail  = lookup(var.fail, "a", "")
}

resource "sftest_thing" "b" {
  node  = node.local
  value = "${sftest_thing.a.id}-b"
  fail  = lookup(var.fail, "b", "")
}

resource "sftest_thing" "c" {
  node  = node.local
  value = "${sftest_thing.b.id}-c"
  fail  = lookup(var.fail, "c", "")
}

resource "sftest_thing" "d" {
  node     = node.local
  value    = var.value
  fail     = lookup(var.fail, "d", "")
  sleep_ms = var.sleep
}
