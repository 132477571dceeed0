node "a" {
  hots = "10.0.0.1"
}
