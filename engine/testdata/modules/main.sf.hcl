# Two module instances, each a per-node stack (first <- second). var.fail
# fails the create of one (module instance, node) pair's first.
variable "fail" {
  type    = map(string)
  default = {}
}

node "local" {
  transport = "local"
}

module "stack" {
  source   = "./stack"
  for_each = toset(["s1", "s2"])
  host     = node.local
  name     = each.key
  fail     = var.fail
}

output "seconds" {
  value = { for k, m in module.stack : k => m.seconds }
}
