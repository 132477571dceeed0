# The fit check at plan: per node, what the recipe asks of the node's
# memory against what it has (node_memory_fit: nvidia-smi's figures, else
# /proc/meminfo), refused with the numbers before any change. On a DGX
# Spark the GPU and the CPU share one memory: the GPU share
# (gpu_memory_utilization of the total, else the weights this node holds)
# and the container's memory limit (else its shm) come out of it, and the
# display unlock frees about 2 GiB more.

locals {
  # --gpu-memory-utilization N (or =N) in args, when the input is not set.
  gmu_arg = try(tonumber(var.args[index(var.args, "--gpu-memory-utilization") + 1]), null)
  gmu_eq  = try(tonumber(one([for a in var.args : trimprefix(a, "--gpu-memory-utilization=") if startswith(a, "--gpu-memory-utilization=")])), null)
  gmu     = var.gpu_memory_utilization != null ? var.gpu_memory_utilization : (local.gmu_arg != null ? local.gmu_arg : local.gmu_eq)

  # The weights' bytes: the snapshot rank 0 copies (model_source), else the
  # node's manifest on the shared hub_dir. A tensor/pipeline-parallel model
  # is split over the ranks; a drafter is counted whole on every rank.
  model_bytes = { for k, n in local.nodes : k => var.model == null ? 0 : (local.src == null ? hubstage_manifest.model[k].total_bytes : hubstage_snapshot.model[local.rank0].total_bytes) }
  draft_bytes = { for k, n in local.nodes : k => var.drafter == null ? 0 : (local.src == null ? hubstage_manifest.draft[k].total_bytes : hubstage_snapshot.draft[local.rank0].total_bytes) }
}

resource "node_memory_fit" "serve" {
  for_each               = local.nodes
  node                   = each.value.node
  model_bytes            = ceil(local.model_bytes[each.key] / var.recipe.required_nodes) + local.draft_bytes[each.key]
  gpu_memory_utilization = local.gmu
  memory                 = var.memory
  shm_size               = var.shm_size
  # Ray's rank 0 runs the head and the server, each with these limits.
  containers      = local.ray_on && each.key == local.rank0 ? 2 : 1
  display_reserve = var.display_unlock == null ? null : var.display_reserve
  override_reason = var.fit_override_reason
  nvidia_smi      = var.fit_nvidia_smi
}
