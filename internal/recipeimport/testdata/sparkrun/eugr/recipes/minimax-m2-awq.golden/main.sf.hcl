# MiniMax-M2-AWQ, imported by `sparkform recipe import` from minimax-m2-awq.yaml.
#
# Recipe: MiniMax-M2-AWQ
# MiniMax M2 model with AWQ quantization
#
# vLLM serving MiniMax-M2-AWQ with Ray distributed backend
# sparkrun recipe (format v1): 2 DGX Spark node(s), one GPU each, tensor parallel 2 x pipeline parallel 1, vLLM backend "ray"; the command's {placeholders} are filled from its defaults.

# The recipe's defaults, as rendered into the command (re-import with -set KEY=VALUE to change one):
#   port: 8000
#   host: 0.0.0.0
#   tensor_parallel: 2
#   gpu_memory_utilization: 0.7
#   max_model_len: 128000
locals {
  entrypoint = [
    "vllm",
    "serve",
  ]
  args = [
    "QuantTrio/MiniMax-M2-AWQ",
    "--host",
    "0.0.0.0",
    "--gpu-memory-utilization",
    "0.7",
    "--max-model-len",
    "128000",
    "--load-format",
    "fastsafetensors",
    "--enable-auto-tool-choice",
    "--tool-call-parser",
    "minimax_m2",
    "--reasoning-parser",
    "minimax_m2",
  ]
  env = {
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
    required_nodes         = 2
    tensor_parallel_size   = 2
    pipeline_parallel_size = 1
    gpus_per_node          = 1
    distributed_backend    = "ray"
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
  model = { repo_id = "QuantTrio/MiniMax-M2-AWQ", revision = "main", target = "/model" }
  # Rank 0 from the hub (or var.model_source), the other ranks from rank 0 over the cluster link.
  model_source = var.model_source

  name       = "minimax-m2-awq"
  image      = "vllm-thor"
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
