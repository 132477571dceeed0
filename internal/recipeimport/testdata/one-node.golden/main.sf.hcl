# Qwen 8B (1x Spark), imported by `sparkform recipe import` from one-node.recipe.toml.
#
# A single-node recipe: no display unlock, no kit, one model.

locals {
  args = [
    "--port-offset",
    "0",
  ]
  env = {
    # Served name.
    SERVED_NAME = "qwen3-8b" # what clients ask for
    "WEIRD.KEY" = "a $${b} %%{c}"
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

  hub_dir = "/srv/hub"
  model   = { repo_id = "Qwen/Qwen3-8B", revision = "0123456789abcdef0123456789abcdef01234567", target = "/model" }
  # null: hub_dir already holds the snapshots (a NAS); set var.model_source to copy them to each node.
  model_source = var.model_source

  name  = "one-node"
  image = "registry.local/qwen-serve:3"
  args  = local.args
  env   = local.env
  # memory_limit, no swap.
  memory   = "24g"
  cpus     = 8
  shm_size = "1g"
  devices = [
    "/dev/dri/card0",
    "/dev/dri/renderD128",
  ]
  mounts = [
    { source = "{home}/qwen-cache", target = "/root/.cache", create_host_path = true },
  ]
}

output "containers" {
  value = module.recipe.containers
}

output "model_commit" {
  value = module.recipe.model_commit
}
