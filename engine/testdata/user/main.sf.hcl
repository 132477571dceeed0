# b uses a (reads its id); b is slow to change.
node "local" {
  transport = "local"
}

resource "sftest_thing" "a" {
  node = node.local
}

resource "sftest_thing" "b" {
  node     = node.local
  value    = sftest_thing.a.id
  sleep_ms = 200
}
