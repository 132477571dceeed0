# A sensitive value and a plain one, read in one batch.
variable "tok" {
  type      = string
  sensitive = true
}

node "local" {
  transport = "local"
}

resource "sftest_thing" "secret" {
  node  = node.local
  value = var.tok
}

resource "sftest_thing" "plain" {
  node  = node.local
  value = "plain-value"
}
