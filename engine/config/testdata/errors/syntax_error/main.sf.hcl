node "a" {
  host = "10.0.0.1
}
