# a launcher recipe, imported by `sparkform recipe import` from env-from-shell.yaml.
#
# Env values sparkrun takes from the shell: one variable each (a sensitive
# root variable), or text around a variable (kept, with a warning).
#
# sparkrun recipe (format v2): 1 DGX Spark node(s), one GPU each, tensor parallel 1 x pipeline parallel 1, vLLM backend "mp"; the command's {placeholders} are filled from its defaults.

# The recipe's defaults, as rendered into the command (re-import with -set KEY=VALUE to change one):
#   port: 8000
locals {
  entrypoint = [
    "vllm",
    "serve",
  ]
  args = [
    "org/model",
  ]
  env = {
    HF_TOKEN       = var.env_hf_token # read at load time by sparkrun
    WANDB_API_KEY  = var.env_wandb_api_key
    AUTH_HEADER    = "Bearer ${var.env_api_token}"
    PLAIN          = "1"
    HF_HUB_CACHE   = "/hub" # added by recipe import: the copied hub folder, mounted at /hub
    HF_HUB_OFFLINE = "1"    # added by recipe import: the copied hub folder, mounted at /hub
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

  # Copied into var.hub_dir on every node, mounted at /hub (HF_HUB_CACHE) and bound file by file at the target.
  hub_dir = var.hub_dir
  # model: from the model key.
  model = { repo_id = "org/model", revision = "main", target = "/model" }
  # Rank 0 from the hub (or var.model_source), the other ranks from rank 0 over the cluster link.
  model_source = var.model_source

  name       = "env-from-shell"
  image      = "registry.example/vllm:0.11"
  entrypoint = local.entrypoint
  args       = local.args
  env        = local.env
  mounts = [
    { source = var.hub_dir, target = "/hub", read_only = true },
  ]
}

output "containers" {
  value = module.recipe.containers
}

output "model_commit" {
  value = module.recipe.model_commit
}
