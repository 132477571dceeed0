# Gemma4-26B-A4B-FP8-Speculative, imported by `sparkform recipe import` from gemma4-26b-a4b-fp8-speculative.yaml.
#
# Recipe: Gemma4-26B-A4B-FP8-Speculative
# Gemma4-26B-A4B with online FP8 quantization and MTP speculative decoding
#
# vLLM serving Gemma4-26B-A4B in FP8 with MTP speculative decoding
# sparkrun recipe (format v1): 2 DGX Spark node(s), one GPU each, tensor parallel 2 x pipeline parallel 1, vLLM backend "ray"; the command's {placeholders} are filled from its defaults.

# The recipe's defaults, as rendered into the command (re-import with -set KEY=VALUE to change one):
#   port: 8000
#   host: 0.0.0.0
#   tensor_parallel: 2
#   gpu_memory_utilization: 0.8
#   max_model_len: 262144
#   max_num_batched_tokens: 8192
locals {
  entrypoint = [
    "vllm",
    "serve",
  ]
  args = [
    "google/gemma-4-26B-A4B-it",
    "--max-model-len",
    "262144",
    "--gpu-memory-utilization",
    "0.8",
    "--host",
    "0.0.0.0",
    "--load-format",
    "safetensors",
    "--enable-prefix-caching",
    "--enable-auto-tool-choice",
    "--tool-call-parser",
    "gemma4",
    "--reasoning-parser",
    "gemma4",
    "--quantization",
    "fp8",
    "--kv-cache-dtype",
    "fp8",
    "--max-num-batched-tokens",
    "8192",
    "--speculative-config",
    "{\"method\":\"mtp\",\"model\":\"google/gemma-4-26B-A4B-it-assistant\",\"num_speculative_tokens\":4,\"moe_backend\":\"triton\"}",
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
  model = { repo_id = "google/gemma-4-26B-A4B-it", revision = "main", target = "/model" }
  # drafter: from --speculative-config "model".
  drafter = { repo_id = "google/gemma-4-26B-A4B-it-assistant", revision = "main", target = "/draft" }
  # Rank 0 from the hub (or var.model_source), the other ranks from rank 0 over the cluster link.
  model_source = var.model_source

  name       = "gemma4-26b-a4b-fp8-speculative"
  image      = "vllm-node"
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
