# Qwen3 30B FP8 with an EAGLE drafter (2x Spark), imported by `sparkform recipe import` from model-key.recipe.toml.
#
# A recipe that names its model and its drafter by hub id only (no NAS, no
# manifest generator): the nodes get copies in their own hub folder.

locals {
  args = [
    "Qwen/Qwen3-30B-A3B-FP8",
    "--speculative-config",
    "{\"method\": \"eagle3\", \"model\": \"RedHatAI/Qwen3-30B-A3B-speculator.eagle3\", \"num_speculative_tokens\": 3}",
  ]
  env = {
    VLLM_NO_USAGE_STATS = "1"
    HF_HUB_CACHE        = "/hub" # added by recipe import: the copied hub folder, mounted at /hub
    HF_HUB_OFFLINE      = "1"    # added by recipe import: the copied hub folder, mounted at /hub
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
  model = { repo_id = "Qwen/Qwen3-30B-A3B-FP8", revision = "9f1e0b6a0c4d8e2f7a1b3c5d7e9f0a2b4c6d8e0f", target = "/model" }
  # drafter: from --speculative-config "model".
  drafter = { repo_id = "RedHatAI/Qwen3-30B-A3B-speculator.eagle3", revision = "main", target = "/draft" }
  # Rank 0 from the hub (or var.model_source), the other ranks from rank 0 over the cluster link.
  model_source = var.model_source

  name  = "model-key"
  image = "registry.local/vllm-serve:0.11"
  args  = local.args
  env   = local.env
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
