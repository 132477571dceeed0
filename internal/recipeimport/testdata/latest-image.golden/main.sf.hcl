# a launcher recipe, imported by `sparkform recipe import` from latest-image.recipe.toml.
#
# An image on :latest: imported, with a warning that drift cannot be seen.

locals {
  args = []
  env = {
  }
}

node "spark" {
  for_each      = var.nodes
  host          = each.value.host
  port          = each.value.port
  user          = var.user
  identity_file = var.identity_file
  known_hosts   = var.known_hosts
  become        = true
}

module "recipe" {
  source = "./modules/spark-recipe"

  recipe = {
    required_nodes         = 1
    tensor_parallel_size   = 1
    pipeline_parallel_size = 1
    gpus_per_node          = 1
    distributed_backend    = "mp"
    nodes = { for k, n in var.nodes : k => {
      node            = node.spark[k]
      rank            = n.rank
      home            = n.home
      serve_port      = n.serve_port
      cluster_address = n.cluster_address
    } }
  }

  name  = "latest-image"
  image = "ghcr.io/example/vllm:latest"
  args  = local.args
  env   = local.env
}

output "containers" {
  value = module.recipe.containers
}
