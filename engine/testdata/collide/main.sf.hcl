# Instances that own an object on a node (sftest_thing's identity is
# "owns"): var.root_owns and the module's instances may claim the same one.
variable "root_owns" {
  type    = string
  default = "kit"
}
variable "mod_owns" {
  type    = string
  default = "other"
}
variable "other_host" {
  type    = string
  default = "127.0.0.1"
}

node "local" {
  transport = "local"
}

node "elsewhere" {
  host = var.other_host
}

resource "sftest_thing" "root" {
  node  = node.local
  value = "r"
  owns  = var.root_owns
}

module "second" {
  source = "./owner"
  host   = node.local
  owns   = var.mod_owns
}

# The same identity on another machine is no collision (planned only with
# -target, since that node is not reachable in tests).
resource "sftest_thing" "far" {
  count = 0
  node  = node.elsewhere
  owns  = var.root_owns
}
