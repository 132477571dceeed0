node "a" {
  transport = "local"
}
node "a" {
  host = "10.0.0.1"
}
