# A thing whose value comes from a sensitive variable: its drift keeps
# the paths state holds.
variable "value" {
  type      = string
  default   = "v1-secret"
  sensitive = true
}

node "local" {
  transport = "local"
}

resource "sftest_thing" "d" {
  node  = node.local
  value = var.value
  fail  = ""
}
