# lifecycle guards: prevent_destroy and ignore_changes.
variable "key" {
  type    = string
  default = "k1"
}
variable "value" {
  type    = string
  default = "v1"
}

node "local" {
  transport = "local"
}

resource "sftest_thing" "kept" {
  node  = node.local
  key   = var.key
  value = "kept"
  lifecycle {
    prevent_destroy = true
  }
}

resource "sftest_thing" "ignoring" {
  node  = node.local
  key   = var.key
  value = var.value
  lifecycle {
    ignore_changes = [value]
  }
}
