# Inputs of the seed recipe dsv41-flash-exl3-2x. The defaults are the seed's
# values; the end-to-end test (e2e/) overrides only hosts, paths and the
# image (plus the kit's repo and commit, which must exist in its local repo).

variable "nodes" {
  description = "The two Sparks on the 8nodes-switch RoCE fabric (first two free ranks), keyed by name: SSH host and port, TP rank, the home folder holding the kit and the cache, and the serving port."
  type = map(object({
    host       = string
    rank       = number
    port       = optional(number, 22)
    home       = optional(string, "/home/kilork")
    serve_port = optional(number, 8000)
  }))
  default = {
    spark-01 = { host = "192.168.100.11", rank = 0 }
    spark-02 = { host = "192.168.100.12", rank = 1 }
  }

  # The recipe is TP2 (required_nodes = 2, --nnodes 2): exactly two nodes,
  # ranks 0 and 1, one each (rank 0 is the master every rank joins).
  validation {
    condition     = length(var.nodes) == 2
    error_message = "The recipe runs tensor-parallel over exactly 2 nodes (--nnodes 2); give var.nodes two entries."
  }
  validation {
    condition     = length([for n in var.nodes : n if n.rank == 0]) == 1
    error_message = "Exactly one node must have rank = 0: it is the master (master_addr) the other rank joins."
  }
  validation {
    condition     = alltrue([for n in var.nodes : n.rank >= 0 && n.rank < length(var.nodes) && floor(n.rank) == n.rank]) && length(distinct([for n in var.nodes : n.rank])) == length(var.nodes)
    error_message = "Ranks must be 0 and 1, one per node (--node-rank)."
  }
}

variable "user" {
  description = "The SSH user on every node (sudo -n for the kernel module and the Docker socket)."
  default     = "kilork"
}

variable "identity_file" {
  description = "Private key for SSH; null uses the ssh-agent and ~/.ssh/id_ed25519, id_rsa."
  default     = null
}

variable "known_hosts" {
  description = "known_hosts file the node keys are checked against; null means ~/.ssh/known_hosts."
  default     = null
}

variable "image" {
  description = "The serving image (rc2, pinned at the kit's release commit)."
  default     = "ghcr.io/coolbho3k/deepseek-v4.1-flash-exl3-3bpw-2x-dgx-spark:20260917-rc2"
}

variable "hub_dir" {
  description = "The Hugging Face hub cache on the shared NAS, as every node mounts it."
  default     = "/mnt/nas/ai/huggingface/hub"
}

variable "model_source" {
  description = "null (the default): hub_dir is the shared NAS that holds the snapshots. {} (or a source, see modules/spark-recipe): rank 0 fetches them from the hub into hub_dir, rank 1 copies rank 0's over the cluster link."
  type = object({
    endpoint     = optional(string)
    token_env    = optional(string)
    local_dir    = optional(string)
    node         = optional(any)
    node_hub_dir = optional(string)
    node_address = optional(string)
    transfer     = optional(string)
    peers        = optional(string, "direct")
    keep_free    = optional(string)
    parallel     = optional(number)
  })
  default = null
}

variable "kit_repo" {
  description = "Repository of the runtime kit (serve.py, conservative.yaml, overlay .so, AOT gemm)."
  default     = "https://github.com/coolbho3k/DeepSeek-v4.1-Flash-2x-DGX-Spark.git"
}

variable "kit_commit" {
  description = "The kit's pinned release commit (full 40-hex id)."
  default     = "878e0eecd893fadc69ad2d58b2df0fabb0fae2ee"
}

variable "gpu_device" {
  description = "The display device the runtime opens: \"/dev/dri/card0\", or \"HOST:CONTAINER[:PERMS]\"."
  default     = "/dev/dri/card0"
}

# The container a Spark needs: the defaults are the community standard
# (and the module's); the end-to-end test, on a machine with no GPU, no
# RDMA NIC and a Docker Engine that may not raise memlock, overrides them.

variable "gpus" {
  description = "GPUs for each rank's container (docker run --gpus): \"all\", a count, or \"\" for no device request (the node's default runtime gives the GPU)."
  type        = string
  default     = "all"
}

variable "ulimits" {
  description = "The container's ulimits: memlock unlimited (RDMA registration for NCCL over RoCE), a 64 MiB stack."
  type        = map(string)
  default     = { memlock = "-1", stack = "67108864" }
}

variable "infiniband" {
  description = "Bind /dev/infiniband into the containers: the nodes' ConnectX RoCE link on the 8nodes-switch fabric."
  type        = bool
  default     = true
}
