# One model on 2x DGX Spark with vLLM's Ray executor: a Ray head on rank 0,
# a Ray worker on rank 1, and `vllm serve` on rank 0 once the head lists
# both nodes (modules/spark-recipe, distributed_backend = "ray"). The model
# is fetched from the hub by rank 0 and copied to rank 1 over the RoCE
# link. See README.md.

variable "nodes" {
  description = "The two Sparks, keyed by name: SSH host, rank, and the RoCE address (the Ray and NCCL traffic, and the model copy, go over it)."
  type = map(object({
    host            = string
    rank            = number
    cluster_address = string
  }))
  default = {
    spark-01 = { host = "192.168.1.11", rank = 0, cluster_address = "10.100.0.11" }
    spark-02 = { host = "192.168.1.12", rank = 1, cluster_address = "10.100.0.12" }
  }
}

variable "user" {
  description = "The SSH user on every node (sudo -n for the Docker socket and the Ray temp dir)."
  default     = "spark"
}

node "spark" {
  for_each = var.nodes
  host     = each.value.host
  user     = var.user
  become   = true
}

module "qwen3" {
  source = "../../modules/spark-recipe"
  recipe = {
    required_nodes       = 2
    tensor_parallel_size = 2
    distributed_backend  = "ray"
    nodes = { for k, n in var.nodes : k => {
      node            = node.spark[k]
      rank            = n.rank
      home            = "/home/${var.user}"
      cluster_address = n.cluster_address
    } }
  }

  # Rank 0 fetches the snapshot from the hub (HF_TOKEN from sparkform's
  # environment, sent on stdin), rank 1 copies it from rank 0.
  hub_dir      = "/var/cache/huggingface/hub"
  model        = { repo_id = "Qwen/Qwen3-30B-A3B-FP8", target = "/model" }
  model_source = {}

  name       = "qwen3"
  image      = "scitrera/dgx-spark-vllm:0.16.0-t5"
  entrypoint = ["vllm", "serve", "/model"]
  args = [
    "--served-model-name", "qwen3-30b-a3b",
    "--host", "0.0.0.0",
    "--gpu-memory-utilization", "0.8",
    "--max-model-len", "32768",
  ]
  env = {
    HF_HUB_OFFLINE     = "1"
    NCCL_SOCKET_IFNAME = "enp1s0f0np0" # the RoCE interface on your Sparks
  }
  shm_size   = "16g"
  infiniband = true

  # Ray's settings as sparkrun uses them: port 46379 (6379 is often a
  # Redis), no memory monitor killing workers on a unified-memory node.
  ray = {
    port = 46379
    env  = { RAY_memory_monitor_refresh_ms = "0" }
  }
}

output "ray_address" {
  value = module.qwen3.ray_address
}
