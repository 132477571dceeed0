variable "nodes" {
  description = "The Spark nodes, by name."
  type = map(object({
    host = string
    rank = number
  }))
  default = {
    spark-01 = { host = "192.168.100.11", rank = 0 }
    spark-02 = { host = "192.168.100.12", rank = 1 }
  }
}

locals {
  image = "ghcr.io/coolbho3k/deepseek-v4.1-flash-exl3-3bpw-2x-dgx-spark:20260917-rc2"
  kit   = "/home/kilork/exl3-kit/878e0ee"
}

node "spark" {
  for_each = var.nodes
  host     = each.value.host
  user     = "kilork"
  become   = true
}

resource "kmod_module" "nvidia_drm" {
  for_each = var.nodes
  node     = node.spark[each.key]
  name     = "nvidia_drm"
  params   = { modeset = "1", fbdev = "0" }
}

resource "gitkit_checkout" "runtime" {
  for_each = var.nodes
  node     = node.spark[each.key]
  repo     = "https://github.com/coolbho3k/DeepSeek-v4.1-Flash-2x-DGX-Spark.git"
  commit   = "878e0eecd893fadc69ad2d58b2df0fabb0fae2ee"
  subdir   = "release/runtime"
  path     = local.kit
}

resource "hubstage_manifest" "model" {
  for_each = var.nodes
  node     = node.spark[each.key]
  hub_dir  = "/mnt/nas/ai/huggingface/hub"
  repo_id  = "coolbho3k/DeepSeek-V4.1-Flash-EXL3-3bpw"
  revision = "main"
  target   = "/model"
}

resource "docker_container" "ds41" {
  for_each    = var.nodes
  node        = node.spark[each.key]
  name        = "ds41-flash-exl3"
  image       = local.image
  entrypoint  = ["/opt/ds41-venv/bin/python", "/opt/ds41-serving/serve.py", "serve", "/model"]
  command     = ["--served-model-name", "deepseek-v41-flash-exl3"]
  memory      = "9g"
  memory_swap = "9g"
  cpus        = 6
  shm_size    = "2g"
  devices     = ["/dev/dri/card0"]
  env         = { DS41_MAX_MODEL_LEN = "1048576", VLLM_CACHE_ROOT = "/cache/vllm" }
  mount {
    source    = "/mnt/nas/ai/huggingface/hub"
    target    = "/hub"
    read_only = true
  }
  mount {
    source    = "${gitkit_checkout.runtime[each.key].path}/serving"
    target    = "/opt/ds41-serving"
    read_only = true
  }
  bind_files = hubstage_manifest.model[each.key].files
  depends_on = [kmod_module.nvidia_drm]

  lifecycle {
    ignore_changes = [env["VLLM_CACHE_ROOT"]]
  }
}

output "endpoints" {
  value = { for k, n in node.spark : k => "http://${n.host}:8000" }
}
