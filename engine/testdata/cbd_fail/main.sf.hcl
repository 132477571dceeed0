# One create_before_destroy object whose old half cannot be deleted
# (fail = "delete" is in its stored value): a replacement leaves it in
# state under #deposed.
node "local" {
  transport = "local"
}

resource "sftest_thing" "cbd" {
  node = node.local
  key  = "k1"
  fail = "delete"
  lifecycle {
    create_before_destroy = true
  }
}
