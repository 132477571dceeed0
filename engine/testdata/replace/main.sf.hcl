# Two objects replaced when var.key changes: plain (delete, then create)
# and cbd (create_before_destroy: create, move users, then delete). Each
# has a user that reads its id.
variable "key" {
  type    = string
  default = "k1"
}

node "local" {
  transport = "local"
}

resource "sftest_thing" "plain" {
  node = node.local
  key  = var.key
}

resource "sftest_thing" "plain_user" {
  node  = node.local
  value = sftest_thing.plain.id
}

resource "sftest_thing" "cbd" {
  node = node.local
  key  = var.key
  lifecycle {
    create_before_destroy = true
  }
}

resource "sftest_thing" "cbd_user" {
  node  = node.local
  value = sftest_thing.cbd.id
}
