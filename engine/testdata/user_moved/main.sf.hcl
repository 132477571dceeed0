# The user fixture after b stopped using a and a was removed.
node "local" {
  transport = "local"
}

resource "sftest_thing" "b" {
  node     = node.local
  value    = "own"
  sleep_ms = 200
}
