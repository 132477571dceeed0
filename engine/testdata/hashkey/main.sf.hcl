# Instance keys with '#' in them, inside a module: state's addresses hold
# the '#' that also starts a deposed suffix.
node "local" {
  transport = "local"
}

module "m" {
  source   = "./m"
  for_each = toset(["llama#2", "plain"])
  host     = node.local
  tag      = each.key
}
