# a launcher recipe, imported by `sparkform recipe import` from nemotron3-nano-30b-nvfp4-vllm.yaml.
#
# NVIDIA Nemotron 3 Nano 30B (upstream NVFP4) -- cluster or solo
# sparkrun recipe (format v2): 1 DGX Spark node(s), one GPU each, tensor parallel 1 x pipeline parallel 1, vLLM backend "mp"; the command's {placeholders} are filled from its defaults.

# The recipe's defaults, as rendered into the command (re-import with -set KEY=VALUE to change one):
#   port: 8000
#   host: 0.0.0.0
#   tensor_parallel: 1
#   gpu_memory_utilization: 0.8
#   max_model_len: 200000
#   served_model_name: nemotron3-30b-a3b
#   tool_call_parser: qwen3_coder
locals {
  entrypoint = [
    "vllm",
    "serve",
  ]
  args = [
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4",
    "--served-model-name",
    "nemotron3-30b-a3b",
    "--max-model-len",
    "200000",
    "--gpu-memory-utilization",
    "0.8",
    "--host",
    "0.0.0.0",
    "--enable-auto-tool-choice",
    "--tool-call-parser",
    "qwen3_coder",
    "--trust-remote-code",
  ]
  env = {
    VLLM_ALLOW_LONG_MAX_MODEL_LEN = "1"
    HF_HUB_CACHE                  = "/hub" # added by recipe import: the copied hub folder, mounted at /hub
    HF_HUB_OFFLINE                = "1"    # added by recipe import: the copied hub folder, mounted at /hub
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
  model = { repo_id = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4", revision = "abc123def", target = "/model" }
  # Rank 0 from the hub (or var.model_source), the other ranks from rank 0 over the cluster link.
  model_source = var.model_source

  name       = "nemotron3-nano-30b-nvfp4-vllm"
  image      = "scitrera/dgx-spark-vllm:0.16.0-t5"
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
