node "a" {
  transport = "local"
}

resource "gitkit_checkout" "runtime" {
  node = node.a
  path = "/opt/kit"
}

resource "docker_container" "c" {
  node  = node.a
  image = "busybox"
  env   = { KIT = gitkit_checkout.runtim.path }
}
