# Inputs of the spark-recipe module: one launcher recipe (a *.recipe.toml)
# placed on nodes the caller passes in. `sparkform recipe import` writes a
# root module that calls this one; docs/recipes.md maps every recipe key.

variable "recipe" {
  description = "The recipe's layout and where it runs: required_nodes, tensor/pipeline parallel sizes, GPUs per node, the distributed backend (\"mp\", or \"ray\": a Ray cluster, see ray.sf.hcl), and per node (keyed by name) the node object (node.NAME[KEY]), its rank, home folder, serving port and cluster_address (the address the other nodes reach its sshd at over the cluster link, e.g. the 200G RoCE address; null: the node's host), which the model copies from rank 0 and Ray (an IP address: Ray registers each node under it) use, and infiniband (this node has RoCE/InfiniBand: null takes var.infiniband)."
  type = object({
    required_nodes         = number
    tensor_parallel_size   = number
    pipeline_parallel_size = optional(number, 1)
    gpus_per_node          = optional(number, 1)
    distributed_backend    = optional(string, "mp")
    nodes = map(object({
      node            = any
      rank            = number
      home            = optional(string, "/home/kilork")
      serve_port      = optional(number, 8000)
      cluster_address = optional(string)
      infiniband      = optional(bool)
    }))
  })

  validation {
    condition     = length(var.recipe.nodes) == var.recipe.required_nodes
    error_message = "The recipe needs exactly required_nodes nodes (--nnodes): give recipe.nodes that many entries."
  }
  validation {
    condition     = length([for n in var.recipe.nodes : n if n.rank == 0]) == 1
    error_message = "Exactly one node must have rank = 0: it is the master (--master-addr) every other rank joins."
  }
  validation {
    condition     = alltrue([for n in var.recipe.nodes : n.rank >= 0 && n.rank < length(var.recipe.nodes) && floor(n.rank) == n.rank]) && length(distinct([for n in var.recipe.nodes : n.rank])) == length(var.recipe.nodes)
    error_message = "Ranks must be 0 .. required_nodes-1, one per node (--node-rank)."
  }
  validation {
    condition     = (var.recipe.required_nodes * var.recipe.gpus_per_node) % max(1, var.recipe.tensor_parallel_size) != 0 || var.recipe.tensor_parallel_size * var.recipe.pipeline_parallel_size == var.recipe.required_nodes * var.recipe.gpus_per_node
    error_message = "tensor_parallel_size x pipeline_parallel_size must equal the GPUs the recipe runs on: required_nodes x gpus_per_node."
  }
  # Ray (ray.sf.hcl): a head on rank 0 and a worker on every other rank.
  validation {
    condition     = var.recipe.tensor_parallel_size >= 1 && floor(var.recipe.tensor_parallel_size) == var.recipe.tensor_parallel_size && (var.recipe.required_nodes * var.recipe.gpus_per_node) % max(1, var.recipe.tensor_parallel_size) == 0
    error_message = "tensor_parallel_size = ${var.recipe.tensor_parallel_size} does not divide the recipe's GPUs (required_nodes x gpus_per_node = ${var.recipe.required_nodes * var.recipe.gpus_per_node}): give a tensor_parallel_size that does, and pipeline_parallel_size = GPUs / tensor_parallel_size."
  }
  validation {
    condition     = contains(["mp", "ray"], var.recipe.distributed_backend)
    error_message = "distributed_backend is \"mp\" (each rank runs the server) or \"ray\" (a Ray head on rank 0, workers on the other ranks, the server on rank 0), not \"${var.recipe.distributed_backend}\"."
  }
  validation {
    condition     = var.recipe.distributed_backend != "ray" || var.recipe.required_nodes >= 2
    error_message = "A Ray recipe runs a Ray head on rank 0 and workers on the other ranks: it needs required_nodes >= 2 (it has ${var.recipe.required_nodes}). On one node use distributed_backend = \"mp\"."
  }
}

variable "display_unlock" {
  description = "The display-RAM unlock: reload this kernel module with these parameters while the recipe serves (temporary; destroy restores what was there). null: none."
  type = object({
    module = string
    params = map(string)
  })
  default = null
}

variable "kit" {
  description = "A runtime kit: one folder (subdir) of a repo at a pinned commit, staged at HOME/dir on each node. Mount sources may use {kit} for its path. null: none."
  type = object({
    repo   = string
    commit = string
    subdir = optional(string)
    dir    = string
  })
  default = null
}

variable "hub_dir" {
  description = "The Hugging Face hub folder the model manifests resolve in, as the nodes see it: a shared folder (NAS) that already holds the snapshots when model_source is null, else the folder on each node the snapshots are copied into. {home} stands for each node's home folder (recipe.nodes[*].home)."
  type        = string
  default     = null
}

variable "model" {
  description = "The model's hub snapshot, bound file by file at target. include/exclude pick files (huggingface_hub allow/ignore pattern syntax) for the copy and the binds alike. null: none."
  type = object({
    repo_id  = string
    revision = optional(string, "main")
    target   = string
    include  = optional(list(string))
    exclude  = optional(list(string))
  })
  default = null
}

variable "drafter" {
  description = "A second snapshot (a speculative drafter), bound at its target; include/exclude as for model. null: none."
  type = object({
    repo_id  = string
    revision = optional(string, "main")
    target   = string
    include  = optional(list(string))
    exclude  = optional(list(string))
  })
  default = null
}

variable "model_source" {
  description = <<-EOT
    Where the model and drafter snapshots come from when hub_dir is not a shared folder that already holds them.
    null (the default): hub_dir already holds them (a NAS); nothing is copied.
    Otherwise every node gets a hubstage_snapshot in hub_dir: rank 0 (every node with peers = "source") from
      - the hub: endpoint (null: the HF_ENDPOINT of sparkform's environment, else https://huggingface.co), the token
        read from the environment variable named by token_env (null: HF_TOKEN); the node fetches, or
      - local_dir: the operator's own hub cache (e.g. "~/.cache/huggingface/hub"), pushed through sparkform, or
      - node: another node that holds the snapshot (node.NAME[KEY]) in node_hub_dir (null: hub_dir), reached at
        node_address (null: its host) and copied over transfer ("direct": node to node, no byte through sparkform;
        "relay": through sparkform);
    and every other rank copies rank 0's snapshot at the exact commit rank 0 got, over the cluster link (the recipe's
    cluster_address of rank 0), as peers says: "direct" (the default), "relay", or "source" (each node from the source
    itself, as rank 0). keep_free and parallel are passed to every hubstage_snapshot (null: its defaults).
  EOT
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

  validation {
    condition     = var.model_source == null || contains(["direct", "relay", "source"], var.model_source.peers)
    error_message = "model_source.peers is \"direct\" (ranks > 0 copy from rank 0 node to node), \"relay\" (through sparkform) or \"source\" (each node from the source itself)."
  }
  validation {
    condition     = var.model_source == null || length([for s in [var.model_source.endpoint, var.model_source.local_dir, var.model_source.node] : s if s != null]) <= 1
    error_message = "model_source takes one source: endpoint (a hub), local_dir (this machine's hub cache) or node (another node); leave the others null."
  }
}

variable "manifest_path" {
  description = "Also write the model's bind manifest (REAL<TAB>TARGET lines) to this file on each node, for tools that read the recipe's extra_mounts_manifest. null: none."
  type        = string
  default     = null
}

variable "name" {
  description = "Container name prefix: each node runs NAME-rRANK."
  type        = string
}

variable "image" {
  type = string
}

variable "entrypoint" {
  type    = list(string)
  default = null
}

variable "args" {
  description = "Arguments; the parallel-layout flags (--tensor-parallel-size, --nnodes, --node-rank, --master-addr, --port, ...) are appended when layout_flags is true."
  type        = list(string)
  default     = []
}

variable "layout_flags" {
  description = "Append the launcher's layout flags to args."
  type        = bool
  default     = true
}

variable "env" {
  type    = map(string)
  default = {}
}

variable "devices" {
  type    = list(string)
  default = []
}

variable "shm_size" {
  type    = string
  default = null
}

variable "memory" {
  description = "The container's memory limit; swap is off (memory_swap = memory) unless swap is true."
  type        = string
  default     = null
}

variable "swap" {
  type    = bool
  default = false
}

variable "cpus" {
  type    = number
  default = null
}

variable "mounts" {
  description = "Extra mounts; a source may use {kit} (the kit's path on the node) and {home}. create_host_path makes a missing source folder (mkdir -p)."
  type = list(object({
    source           = string
    target           = string
    read_only        = optional(bool, false)
    create_host_path = optional(bool, false)
  }))
  default = []
}

variable "wait" {
  description = "Wait for the server: HTTP GET of path on 127.0.0.1:serve_port until 2xx, within timeout. null: do not wait."
  type = object({
    path    = optional(string, "/health")
    timeout = optional(string, "10m")
  })
  default = {}
}

# The container a Spark needs: the community-standard run of a serving
# container on DGX Spark clusters, `docker run --gpus all --ipc=host
# --network host --ulimit memlock=-1 --ulimit stack=67108864` (+
# `--device /dev/infiniband` for NCCL over RoCE, `--privileged` where an
# image asks for it). Each is an input with that default.

variable "gpus" {
  description = "GPUs through a device request (docker run --gpus): \"all\" or a count. Needs the NVIDIA Container Toolkit on the node. \"\": no request (the node's default runtime already gives the GPU, or a test node without one); null, as for every input with a default, means the default."
  type        = string
  default     = "all"
}

variable "ipc_mode" {
  description = "IPC namespace: \"host\" (NCCL and PyTorch share memory through it), \"private\", \"shareable\" or \"container:NAME\"."
  type        = string
  default     = "host"
}

variable "network_mode" {
  description = "Network: \"host\" (NCCL and the serving port on the node's own interfaces, the RoCE link included), or a Docker network."
  type        = string
  default     = "host"
}

variable "ulimits" {
  description = "Ulimits by name, \"SOFT[:HARD]\" (-1 unlimited): memlock unlimited for RDMA registration, a 64 MiB stack. The Docker Engine must be allowed to raise them (root with CAP_SYS_RESOURCE)."
  type        = map(string)
  default     = { memlock = "-1", stack = "67108864" }
}

variable "infiniband" {
  description = "The nodes have RoCE/InfiniBand (a ConnectX NIC, as a Spark's 200G link): bind /dev/infiniband for NCCL over RDMA. A node's recipe.nodes entry may say otherwise for itself."
  type        = bool
  default     = false
}

variable "privileged" {
  description = "Run the container privileged (every capability and host device). Off by default: some serving images ask for it; gpus, devices and infiniband give what vLLM needs."
  type        = bool
  default     = false
}

# The fit check at plan (fit.sf.hcl): node_memory_fit per node.

variable "gpu_memory_utilization" {
  description = "The recipe's gpu_memory_utilization (vLLM's --gpu-memory-utilization: the fraction of the node's total memory it takes). null: read from args (--gpu-memory-utilization N, or =N) when there, else the fit check counts the model's weights on each node."
  type        = number
  default     = null
}

variable "display_reserve" {
  description = "Memory the display unlock frees on each node (about 2 GiB on a DGX Spark), counted as available by the fit check when display_unlock is set."
  type        = string
  default     = "2g"
}

variable "fit_override_reason" {
  description = "Plan even when the fit check finds the recipe does not fit a node's memory, for this reason (shown in the plan). null: the check refuses."
  type        = string
  default     = null
}

variable "fit_nvidia_smi" {
  description = "The nvidia-smi command on the nodes for the fit check (null: \"nvidia-smi\" on their PATH; absent, or without memory figures as on a Spark's unified memory: /proc/meminfo)."
  type        = string
  default     = null
}
