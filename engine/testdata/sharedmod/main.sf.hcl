# Three calls of one module folder: two single calls with their own
# arguments and a for_each call. The folder is loaded once; every
# instance still sees its own arguments and names.
module "a" {
  source = "./m"
  seed   = "x"
}

module "b" {
  source = "./m"
  seed   = "y"
}

module "c" {
  source   = "./m"
  for_each = toset(["k1", "k2"])
  seed     = "${each.key}-${module.a.out}"
}

output "all" {
  value = [module.a.out, module.b.out, module.c["k1"].out, module.c["k2"].out]
}
