# DeepSeek-V4.1-Flash EXL3 3bpw on 2x DGX Spark (TP2/DCP2, DSpark K=3, 1M
# context): the seed recipe dsv41-flash-exl3-2x as sparkform config, a thin
# root that says every seed value once and calls the recipe module
# (modules/spark-recipe). See README.md for the seed line -> construct table.

locals {
  # /model + /draft-exl3 are the exact mounts the runtime validates.
  entrypoint = [
    "/opt/ds41-venv/bin/python",
    "/opt/ds41-serving/serve.py",
    "serve",
    "/model",
    "--config",
    "/opt/ds41-serving/conservative.yaml",
    "--worker-cls",
    "combined_worker.CombinedWorker",
    "--disable-custom-all-reduce",
  ]
  args = [
    "--served-model-name",
    "deepseek-v41-flash-exl3",
    "--enable-auto-tool-choice",
    "--tool-call-parser",
    "deepseek_v41",
    "--reasoning-parser",
    "deepseek_v41",
  ]

  env = {
    # DS41 runtime profile (validated against DS41_* envs; kv_cap_mib is
    # env-only, not a CLI flag).
    DS41_GPU_MEMORY_UTILIZATION       = "0.92"
    DS41_MAX_MODEL_LEN                = "1048576"
    DS41_MAX_NUM_SEQS                 = "2"
    DS41_MAX_NUM_BATCHED_TOKENS       = "3072"
    DS41_LONG_PREFILL_TOKEN_THRESHOLD = "2816"
    DS41_KV_CAP_MIB                   = "0" # display-only: all KV from the 2 GB display pool
    # Feature gates (serve.py hard-requires the '1' set).
    DS41_ENABLE_COOPERATIVE_MOE = "1"
    DS41_ENABLE_DCP2            = "1"
    DS41_ENABLE_DSPARK          = "1"
    DS41_ENABLE_SSD_VOCAB       = "1"
    DS41_SSD_ENGRAM_SOURCE      = "/model/engrams"
    DS41_ENGRAM_CACHE_MIB       = "64"
    DS41_DRAFT_EXL3_PATH        = "/draft-exl3"
    # Node-local cache directories (/cache mount, persistent between serves).
    VLLM_CACHE_ROOT           = "/cache/vllm"
    TILELANG_CACHE_DIR        = "/cache/tilelang"
    TRITON_CACHE_DIR          = "/cache/triton"
    TORCH_EXTENSIONS_DIR      = "/cache/torch-extensions"
    CUDA_CACHE_PATH           = "/cache/cuda"
    XDG_CACHE_HOME            = "/cache"
    FLASHINFER_WORKSPACE_BASE = "/cache/flashinfer"
    TMPDIR                    = "/cache/tmp"
    # Engine / offline / threading.
    VLLM_PLUGINS                      = "ds41"
    VLLM_USE_V2_MODEL_RUNNER          = "1"
    VLLM_USE_BREAKABLE_CUDAGRAPH      = "0"
    VLLM_ENGINE_READY_TIMEOUT_S       = "3600"
    VLLM_WORKER_MULTIPROC_METHOD      = "spawn"
    VLLM_NO_USAGE_STATS               = "1"
    HF_HUB_OFFLINE                    = "1"
    TRANSFORMERS_OFFLINE              = "1"
    DSV41_IO_THREADS                  = "96"
    TORCH_CUDA_ARCH_LIST              = "12.1a"
    FLASHINFER_CUDA_ARCH_LIST         = "12.1a"
    MAX_JOBS                          = "1"
    MKL_NUM_THREADS                   = "4"
    OPENBLAS_NUM_THREADS              = "4"
    TORCH_NCCL_ASYNC_ERROR_HANDLING   = "1"
    MALLOC_ARENA_MAX                  = "2"
    MALLOC_TRIM_THRESHOLD_            = "131072"
    VLLM_SPARSE_INDEXER_MAX_LOGITS_MB = "128"
    # NCCL pins (on top of the cluster's NCCL env).
    NCCL_NVLS_ENABLE         = "0"
    NCCL_CROSS_NIC           = "0"
    NCCL_IB_MERGE_NICS       = "0"
    NCCL_CUMEM_ENABLE        = "0"
    NCCL_MAX_CTAS            = "8"
    NCCL_BUFFSIZE            = "1048576"
    NCCL_LL128_BUFFSIZE      = "262144"
    NCCL_PROTO               = "^LL128"
    NCCL_MAX_NCHANNELS       = "8"
    NCCL_IB_ROCE_VERSION_NUM = "2"
  }
}

# required_nodes = 2: one node per entry of var.nodes.
node "spark" {
  for_each      = var.nodes
  host          = each.value.host
  port          = each.value.port
  user          = var.user
  identity_file = var.identity_file
  known_hosts   = var.known_hosts
  become        = true # sudo -n: module reload and the Docker socket
}

module "dsv41" {
  source = "../../modules/spark-recipe"

  # required_nodes = 2, tensor_parallel_size = 2, pipeline_parallel_size = 1,
  # distributed_backend = "mp"; the ranks and hosts are var.nodes.
  recipe = {
    required_nodes         = 2
    tensor_parallel_size   = 2
    pipeline_parallel_size = 1
    gpus_per_node          = 1
    distributed_backend    = "mp"
    nodes = { for k, n in var.nodes : k => {
      node       = node.spark[k]
      rank       = n.rank
      home       = n.home
      serve_port = n.serve_port
    } }
  }

  # unlock_display_ram / restore_display_ram: the runtime's display-pool KV
  # (1.75 GiB of the 2 GB display reserve per GPU) needs nvidia_drm with
  # modeset=1 fbdev=0. Temporary by design: nothing goes to /etc/modprobe.d,
  # a reboot resets it (the next plan shows it), and destroy reloads the
  # module with the parameters it had before (after_stop).
  display_unlock = { module = "nvidia_drm", params = { modeset = "1", fbdev = "0" } }

  # The runtime kit: release/runtime of the kit repo at the pinned commit,
  # staged once per node (the seed's one-time git clone + checkout + mv).
  kit = {
    repo   = var.kit_repo
    commit = var.kit_commit
    subdir = "release/runtime"
    dir    = "exl3-kit/${substr(var.kit_commit, 0, 7)}"
  }

  # The GENSTAGE heredoc: every file of the current refs/main snapshot,
  # resolved through the hub's relative symlinks to the real blob, bound as
  # a regular file (the runtime opens shards with O_NOFOLLOW); the DSpark
  # K=3 drafter overlay at /draft-exl3.
  # No NAS: -var 'model_source={}' fetches both on rank 0 from the hub and
  # copies them to rank 1 over the cluster link (hub_dir is then each
  # node's own folder; docs/recipes.md, "The model on every node").
  hub_dir      = var.hub_dir
  model        = { repo_id = "coolbho3k/DeepSeek-V4.1-Flash-EXL3-3bpw", revision = "main", target = "/model" }
  drafter      = { repo_id = "coolbho3k/DeepSeek-V4.1-Flash-DSpark-EXL3-3bpw", revision = "main", target = "/draft-exl3" }
  model_source = var.model_source

  name       = "ds41-flash-exl3"
  image      = var.image
  entrypoint = local.entrypoint
  args       = local.args
  env        = local.env

  # The serving guard: memory.max == 9g, swap 0, cpu quota <= 6.
  memory   = "9g"
  cpus     = 6
  shm_size = "2g"
  devices  = [var.gpu_device]

  # The container a Spark needs (the module's defaults, said here so they
  # can be seen): docker run --gpus all --ipc=host --network host
  # --ulimit memlock=-1 --ulimit stack=67108864, and /dev/infiniband: the
  # two ranks run NCCL over the 8nodes-switch RoCE fabric.
  gpus         = var.gpus
  ipc_mode     = "host"
  network_mode = "host"
  ulimits      = var.ulimits
  infiniband   = var.infiniband
  privileged   = false

  # The fit check at plan (node_memory_fit per node): each rank's half of
  # the model's weights plus the whole drafter, plus the 9g container,
  # against the node's available memory plus the ~2 GiB the display
  # unlock frees. DS41_GPU_MEMORY_UTILIZATION is the runtime's own knob
  # (its KV comes from the display pool: DS41_KV_CAP_MIB = 0), not vLLM's
  # --gpu-memory-utilization, so it is not passed as one.
  display_reserve = "2g"

  mounts = [
    # Hub dir (both repos + hub-level blobs/), read-only.
    { source = var.hub_dir, target = "/hub", read_only = true },
    # Runtime kit overlays: serving/ shadows the image's /opt/ds41-serving.
    { source = "{kit}/serving", target = "/opt/ds41-serving", read_only = true },
    { source = "{kit}/aot/mxfp8_gemm_cutlass_sm120", target = "/usr/local/lib/python3.12/dist-packages/flashinfer/data/aot/mxfp8_gemm_cutlass_sm120", read_only = true },
    # Node-local runtime cache, persistent between serves (mkdir -p).
    { source = "{home}/exl3-cache", target = "/cache", create_host_path = true },
  ]

  wait = { path = "/health", timeout = "${local.env.VLLM_ENGINE_READY_TIMEOUT_S}s" }
}

output "model_commit" {
  description = "The hub commit each node serves."
  value       = module.dsv41.model_commit
}

output "containers" {
  description = "Container id per node."
  value       = module.dsv41.containers
}
