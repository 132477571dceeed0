# DeepSeek-V4-Flash, imported by `sparkform recipe import` from deepseek-v4-flash.yaml.
#
# Recipe: DeepSeek-V4-Flash official FP8 on dual DGX Spark
# Based on vLLM PR #41834 tag sm120-pr-41834-stable-preview-20260624, with experimental DeepGEMM SM120 enabled.
# Keep CUDA graphs enabled; do not add --enforce-eager.
#
# DeepSeek V4 Flash FP8 on dual DGX Spark TP=2 with PR 41834 SM12x support, FlashInfer prefill/decode, and experimental DeepGEMM MoE
# sparkrun recipe (format v1): 2 DGX Spark node(s), one GPU each, tensor parallel 2 x pipeline parallel 1, vLLM backend "ray"; the command's {placeholders} are filled from its defaults.

# The recipe's defaults, as rendered into the command (re-import with -set KEY=VALUE to change one):
#   port: 8000
#   host: 0.0.0.0
#   tensor_parallel: 2
#   pipeline_parallel: 1
#   gpu_memory_utilization: 0.85
#   max_model_len: 200000
#   max_num_batched_tokens: 4096
#   max_num_seqs: 2
#   block_size: 256
#   served_model_name: deepseek-v4-flash
locals {
  entrypoint = [
    "vllm",
    "serve",
  ]
  args = [
    "deepseek-ai/DeepSeek-V4-Flash",
    "--served-model-name",
    "deepseek-v4-flash",
    "--host",
    "0.0.0.0",
    "--trust-remote-code",
    "--kv-cache-dtype",
    "fp8",
    "--block-size",
    "256",
    "--enable-prefix-caching",
    "--enable-flashinfer-autotune",
    "--max-model-len",
    "200000",
    "--max-num-seqs",
    "2",
    "--max-num-batched-tokens",
    "4096",
    "--gpu-memory-utilization",
    "0.85",
    "--compilation-config",
    "{\"cudagraph_mode\":\"FULL_AND_PIECEWISE\",\"custom_ops\":[\"all\"]}",
    "--tokenizer-mode",
    "deepseek_v4",
    "--tool-call-parser",
    "deepseek_v4",
    "--enable-auto-tool-choice",
    "--reasoning-parser",
    "deepseek_v4",
    "--reasoning-config",
    "{\"reasoning_parser\":\"deepseek_v4\",\"reasoning_start_str\":\"<think>\",\"reasoning_end_str\":\"</think>\"}",
    "--default-chat-template-kwargs",
    "{\"thinking\":true}",
    "--load-format",
    "safetensors",
  ]
  env = {
    TORCH_CUDA_ARCH_LIST                      = "12.1a"
    VLLM_ALLOW_LONG_MAX_MODEL_LEN             = "1"
    VLLM_TRITON_MLA_SPARSE                    = "1"
    VLLM_DEEPSEEK_V4_FLASHINFER_SM120_DECODE  = "1"
    VLLM_DEEPSEEK_V4_FLASHINFER_SM120_PREFILL = "1"
    # FP8 linear DeepGEMM scale-layout JIT currently fails on GB10 with CUDA_ERROR_INVALID_IMAGE.
    VLLM_USE_DEEP_GEMM               = "0"
    VLLM_MOE_USE_DEEP_GEMM           = "1"
    VLLM_USE_DEEP_GEMM_E8M0          = "0"
    FLASHINFER_DISABLE_VERSION_CHECK = "1"
    TILELANG_CLEANUP_TEMP_FILES      = "1"
    DG_JIT_USE_NVRTC                 = "0"
    DG_JIT_NVCC_COMPILER             = "/usr/local/cuda/bin/nvcc"
    DG_JIT_PRINT_COMPILER_COMMAND    = "1"
    NCCL_IB_DISABLE                  = "0"
    NCCL_DEBUG                       = "WARN"
    HF_HUB_CACHE                     = "/hub" # added by recipe import: the copied hub folder, mounted at /hub
    HF_HUB_OFFLINE                   = "1"    # added by recipe import: the copied hub folder, mounted at /hub
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
  model = { repo_id = "deepseek-ai/DeepSeek-V4-Flash", revision = "main", target = "/model" }
  # Rank 0 from the hub (or var.model_source), the other ranks from rank 0 over the cluster link.
  model_source = var.model_source

  name       = "deepseek-v4-flash"
  image      = "vllm-node-dsv4"
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
