# DeepSeek-V4.1-Flash EXL3 3bpw on 2x DGX Spark (TP2/DCP2, DSpark K=3, 1M
# context): the seed recipe dsv41-flash-exl3-2x as sparkform config. See
# README.md for the seed line -> construct table.

locals {
  # The TP2 peer every rank joins: the rank-0 node.
  master_addr = one([for k, n in var.nodes : n.host if n.rank == 0])
  # Kit folder named by the short commit, as the seed's exl3-kit/878e0ee.
  kit_dir = "exl3-kit/${substr(var.kit_commit, 0, 7)}"

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

# unlock_display_ram / restore_display_ram: the runtime's display-pool KV
# (1.75 GiB of the 2 GB display reserve per GPU) needs nvidia_drm with
# modeset=1 fbdev=0. Temporary by design: nothing goes to /etc/modprobe.d,
# a reboot resets it (the next plan shows it), and destroy reloads the
# module with the parameters it had before (after_stop).
resource "kmod_module" "nvidia_drm" {
  for_each = var.nodes
  node     = node.spark[each.key]
  name     = "nvidia_drm"
  params   = { modeset = "1", fbdev = "0" }
}

# The runtime kit: release/runtime of the kit repo at the pinned commit,
# staged once per node (the seed's one-time git clone + checkout + mv).
resource "gitkit_checkout" "runtime" {
  for_each   = var.nodes
  node       = node.spark[each.key]
  repo       = var.kit_repo
  commit     = var.kit_commit
  subdir     = "release/runtime"
  path       = "${each.value.home}/${local.kit_dir}"
  depends_on = [kmod_module.nvidia_drm]
}

# The GENSTAGE heredoc: every file of the current refs/main snapshot,
# resolved through the hub's relative symlinks to the real blob, bound as a
# regular file (the runtime opens shards with O_NOFOLLOW).
resource "hubstage_manifest" "model" {
  for_each   = var.nodes
  node       = node.spark[each.key]
  hub_dir    = var.hub_dir
  repo_id    = "coolbho3k/DeepSeek-V4.1-Flash-EXL3-3bpw"
  revision   = "main"
  target     = "/model"
  depends_on = [kmod_module.nvidia_drm]
}

# The DSpark K=3 drafter overlay, bound at /draft-exl3.
resource "hubstage_manifest" "draft" {
  for_each   = var.nodes
  node       = node.spark[each.key]
  hub_dir    = var.hub_dir
  repo_id    = "coolbho3k/DeepSeek-V4.1-Flash-DSpark-EXL3-3bpw"
  revision   = "main"
  target     = "/draft-exl3"
  depends_on = [kmod_module.nvidia_drm]
}

resource "docker_image" "ds41" {
  for_each = var.nodes
  node     = node.spark[each.key]
  name     = var.image
}

resource "docker_container" "ds41" {
  for_each   = var.nodes
  node       = node.spark[each.key]
  name       = "ds41-flash-exl3-r${each.value.rank}"
  image      = docker_image.ds41[each.key].name
  entrypoint = local.entrypoint
  # tensor_parallel_size = 2, pipeline_parallel_size = 1,
  # distributed_backend = "mp" across the two nodes; the launcher passed
  # these and the port.
  command = concat(local.args, [
    "--tensor-parallel-size", "2",
    "--pipeline-parallel-size", "1",
    "--distributed-executor-backend", "mp",
    "--nnodes", "2",
    "--node-rank", tostring(each.value.rank),
    "--master-addr", local.master_addr,
    "--port", tostring(each.value.serve_port),
  ])
  env = local.env

  # The serving guard: memory.max == 9g, swap 0, cpu quota <= 6.
  memory       = "9g"
  memory_swap  = "9g" # equal to memory: no swap
  cpus         = 6
  shm_size     = "2g"
  devices      = [var.gpu_device]
  network_mode = "host" # RoCE/NCCL between the ranks, and the API port

  # Hub dir (both repos + hub-level blobs/), read-only.
  mount {
    source    = var.hub_dir
    target    = "/hub"
    read_only = true
  }
  # Runtime kit overlays: serving/ shadows the image's /opt/ds41-serving.
  mount {
    source    = "${gitkit_checkout.runtime[each.key].path}/serving"
    target    = "/opt/ds41-serving"
    read_only = true
  }
  mount {
    source    = "${gitkit_checkout.runtime[each.key].path}/aot/mxfp8_gemm_cutlass_sm120"
    target    = "/usr/local/lib/python3.12/dist-packages/flashinfer/data/aot/mxfp8_gemm_cutlass_sm120"
    read_only = true
  }
  # Node-local runtime cache, persistent between serves (mkdir -p).
  mount {
    source           = "${each.value.home}/exl3-cache"
    target           = "/cache"
    create_host_path = true
  }

  # /model and /draft-exl3: one read-only bind per regular file.
  bind_files = concat(hubstage_manifest.model[each.key].files, hubstage_manifest.draft[each.key].files)

  wait {
    http    = "http://127.0.0.1:${each.value.serve_port}/health"
    timeout = "${local.env.VLLM_ENGINE_READY_TIMEOUT_S}s"
  }

  # The container holds /dev/dri/card0: the module is reloaded before it
  # starts and restored only after it is gone.
  depends_on = [kmod_module.nvidia_drm]
}

output "model_commit" {
  description = "The hub commit each node serves."
  value       = { for k, m in hubstage_manifest.model : k => m.commit }
}

output "containers" {
  description = "Container id per node."
  value       = { for k, c in docker_container.ds41 : k => c.id }
}
