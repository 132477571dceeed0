# a launcher recipe, imported by `sparkform recipe import` from qwen3-1.7b-gguf-llama-cpp.yaml.
#
# Qwen3 1.7B (Q8_0 GGUF) -- small test model via llama.cpp
# sparkrun recipe (format v2): 1 DGX Spark node(s), one GPU each, tensor parallel 1 x pipeline parallel 1; the command's {placeholders} are filled from its defaults.

# The recipe's defaults, as rendered into the command (re-import with -set KEY=VALUE to change one):
#   port: 8000
#   host: 0.0.0.0
#   n_gpu_layers: 99
#   ctx_size: 8192
locals {
  entrypoint = [
    "llama-server",
  ]
  args = [
    "-hf",
    "Qwen/Qwen3-1.7B-GGUF:Q8_0",
    "--host",
    "0.0.0.0",
    "--port",
    "8000",
    "--n-gpu-layers",
    "99",
    "--ctx-size",
    "8192",
    "--flash-attn",
    "on",
    "--jinja",
    "--no-webui",
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
  model = { repo_id = "Qwen/Qwen3-1.7B-GGUF", revision = "main", target = "/model", include = ["*Q8_0*"] }
  # Rank 0 from the hub (or var.model_source), the other ranks from rank 0 over the cluster link.
  model_source = var.model_source

  name       = "qwen3-1.7b-gguf-llama-cpp"
  image      = "scitrera/dgx-spark-llama-cpp:b8076-cu131"
  entrypoint = local.entrypoint
  args       = local.args
  # Not vLLM: the recipe's command has its own flags; the module adds none.
  layout_flags = false
  env          = local.env
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
