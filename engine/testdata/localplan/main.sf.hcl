# Plans of a type whose plans reach no node (sfwide_local) and of one
# whose plans may (sfwide_node), for the plan's bound on calls in flight.
node "local" {
  transport = "local"
}

resource "sfwide_local" "l" {
  count = 24
  node  = node.local
  value = "l${count.index}"
}

resource "sfwide_node" "n" {
  count = 24
  node  = node.local
  value = "n${count.index}"
}
