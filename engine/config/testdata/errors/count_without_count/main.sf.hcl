node "a" {
  transport = "local"
  user      = "u${count.index}"
}
