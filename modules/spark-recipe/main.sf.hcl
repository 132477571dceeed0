# One launcher recipe on the nodes the caller passes in: the display-RAM
# unlock, the runtime kit, the model (and drafter) bind manifests, the
# image and the serving container per node. Every per-node resource refers
# to the others by its own key, so a failure on one node holds back only
# that node's stack.

locals {
  nodes = var.recipe.nodes
  # The rank-0 node every other rank joins.
  master_addr = one([for k, n in local.nodes : n.node.host if n.rank == 0])
  # The model copies (model_source set): rank 0 from the source, the
  # others from rank 0 over the cluster link (peers = "source": every node
  # from the source).
  rank0 = one([for k, n in local.nodes : k if n.rank == 0])
  src   = var.model_source
  from_source = local.src == null ? {} : {
    for k, n in local.nodes : k => n if n.rank == 0 || local.src.peers == "source"
  }
  from_rank0 = local.src == null ? {} : {
    for k, n in local.nodes : k => n if n.rank != 0 && local.src.peers != "source"
  }
  # The container a Spark needs: the device request ("" is none)
  # and per node the devices, /dev/infiniband where the node has RoCE.
  gpus = var.gpus == "" ? null : var.gpus
  devices = { for k, n in local.nodes : k => concat(var.devices,
    coalesce(n.infiniband, var.infiniband) ? ["/dev/infiniband"] : [],
  ) }
  layout = [
    "--tensor-parallel-size", tostring(var.recipe.tensor_parallel_size),
    "--pipeline-parallel-size", tostring(var.recipe.pipeline_parallel_size),
    "--distributed-executor-backend", var.recipe.distributed_backend,
    "--nnodes", tostring(var.recipe.required_nodes),
  ]
}

resource "kmod_module" "display" {
  for_each = var.display_unlock == null ? {} : local.nodes
  node     = each.value.node
  name     = var.display_unlock.module
  params   = var.display_unlock.params
}

resource "gitkit_checkout" "kit" {
  for_each   = var.kit == null ? {} : local.nodes
  node       = each.value.node
  repo       = var.kit.repo
  commit     = var.kit.commit
  subdir     = var.kit.subdir
  path       = "${each.value.home}/${var.kit.dir}"
  depends_on = [kmod_module.display]
}

# The model snapshot on rank 0 (every node with peers = "source"), from
# the hub, the operator's hub cache or another node.
resource "hubstage_snapshot" "model" {
  for_each         = var.model == null ? {} : local.from_source
  node             = each.value.node
  hub_dir          = replace(var.hub_dir, "{home}", each.value.home)
  repo_id          = var.model.repo_id
  revision         = var.model.revision
  include          = var.model.include
  exclude          = var.model.exclude
  endpoint         = local.src.endpoint
  token_env        = local.src.token_env
  source_local_dir = local.src.local_dir
  source_node      = local.src.node
  source_hub_dir   = local.src.node_hub_dir
  source_address   = local.src.node_address
  transfer         = local.src.transfer
  keep_free        = local.src.keep_free
  parallel         = local.src.parallel
}

# The other ranks copy rank 0's snapshot at the commit rank 0 got, over
# the cluster link: every node serves the same bytes.
resource "hubstage_snapshot" "model_peer" {
  for_each       = var.model == null ? {} : local.from_rank0
  node           = each.value.node
  hub_dir        = replace(var.hub_dir, "{home}", each.value.home)
  repo_id        = var.model.repo_id
  revision       = hubstage_snapshot.model[local.rank0].commit
  include        = var.model.include
  exclude        = var.model.exclude
  source_node    = local.nodes[local.rank0].node
  source_hub_dir = replace(var.hub_dir, "{home}", local.nodes[local.rank0].home)
  source_address = local.nodes[local.rank0].cluster_address
  transfer       = local.src.peers
  keep_free      = local.src.keep_free
  parallel       = local.src.parallel
}

resource "hubstage_snapshot" "draft" {
  for_each         = var.drafter == null ? {} : local.from_source
  node             = each.value.node
  hub_dir          = replace(var.hub_dir, "{home}", each.value.home)
  repo_id          = var.drafter.repo_id
  revision         = var.drafter.revision
  include          = var.drafter.include
  exclude          = var.drafter.exclude
  endpoint         = local.src.endpoint
  token_env        = local.src.token_env
  source_local_dir = local.src.local_dir
  source_node      = local.src.node
  source_hub_dir   = local.src.node_hub_dir
  source_address   = local.src.node_address
  transfer         = local.src.transfer
  keep_free        = local.src.keep_free
  parallel         = local.src.parallel
}

resource "hubstage_snapshot" "draft_peer" {
  for_each       = var.drafter == null ? {} : local.from_rank0
  node           = each.value.node
  hub_dir        = replace(var.hub_dir, "{home}", each.value.home)
  repo_id        = var.drafter.repo_id
  revision       = hubstage_snapshot.draft[local.rank0].commit
  include        = var.drafter.include
  exclude        = var.drafter.exclude
  source_node    = local.nodes[local.rank0].node
  source_hub_dir = replace(var.hub_dir, "{home}", local.nodes[local.rank0].home)
  source_address = local.nodes[local.rank0].cluster_address
  transfer       = local.src.peers
  keep_free      = local.src.keep_free
  parallel       = local.src.parallel
}

locals {
  # The commit each node's snapshot holds (model_source set).
  model_commit = merge({ for k, s in hubstage_snapshot.model : k => s.commit }, { for k, s in hubstage_snapshot.model_peer : k => s.commit })
  draft_commit = merge({ for k, s in hubstage_snapshot.draft : k => s.commit }, { for k, s in hubstage_snapshot.draft_peer : k => s.commit })
}

# The bind manifests: from the snapshot copied to the node (its commit,
# a dependency), or from the shared hub_dir at the revision.
resource "hubstage_manifest" "model" {
  for_each      = var.model == null ? {} : local.nodes
  node          = each.value.node
  hub_dir       = replace(var.hub_dir, "{home}", each.value.home)
  repo_id       = var.model.repo_id
  revision      = local.src == null ? var.model.revision : local.model_commit[each.key]
  include       = var.model.include
  exclude       = var.model.exclude
  target        = var.model.target
  manifest_path = var.manifest_path
  depends_on    = [kmod_module.display]
}

resource "hubstage_manifest" "draft" {
  for_each   = var.drafter == null ? {} : local.nodes
  node       = each.value.node
  hub_dir    = replace(var.hub_dir, "{home}", each.value.home)
  repo_id    = var.drafter.repo_id
  revision   = local.src == null ? var.drafter.revision : local.draft_commit[each.key]
  include    = var.drafter.include
  exclude    = var.drafter.exclude
  target     = var.drafter.target
  depends_on = [kmod_module.display]
}

resource "docker_image" "serve" {
  for_each = local.nodes
  node     = each.value.node
  name     = var.image
}

resource "docker_container" "serve" {
  # Ray (ray.sf.hcl): rank 0 only, with Ray's layout flags and the cluster
  # in its environment and at /tmp/ray.
  for_each   = local.serve_nodes
  node       = each.value.node
  name       = "${var.name}-r${each.value.rank}"
  image      = docker_image.serve[each.key].name
  entrypoint = var.entrypoint
  command = concat(var.args, var.layout_flags ? (local.ray_on ? local.ray_layout : concat(local.layout, [
    "--node-rank", tostring(each.value.rank),
    "--master-addr", local.master_addr,
    "--port", tostring(each.value.serve_port),
  ])) : [])
  env         = merge(var.env, local.ray_serve_env)
  memory      = var.memory
  memory_swap = var.memory != null && !var.swap ? var.memory : null
  cpus        = var.cpus
  shm_size    = var.shm_size

  # The container a Spark needs (variables.sf.hcl).
  gpus         = local.gpus
  devices      = local.devices[each.key]
  network_mode = var.network_mode
  ipc_mode     = var.ipc_mode
  ulimits      = var.ulimits
  privileged   = var.privileged

  dynamic "mount" {
    for_each = var.mounts
    content {
      source           = replace(replace(mount.value.source, "{home}", each.value.home), "{kit}", var.kit == null ? "" : gitkit_checkout.kit[each.key].path)
      target           = mount.value.target
      read_only        = mount.value.read_only
      create_host_path = mount.value.create_host_path
    }
  }
  dynamic "mount" {
    for_each = local.ray_on ? [local.ray_tmp] : []
    content {
      source = mount.value
      target = "/tmp/ray"
    }
  }
  # A new Ray cluster (ray_ready replaced) is a new server.
  labels = local.ray_on ? { "sparkform.ray-cluster" = node_command.ray_ready[each.key].id } : null

  bind_files = concat(
    var.model == null ? [] : hubstage_manifest.model[each.key].files,
    var.drafter == null ? [] : hubstage_manifest.draft[each.key].files,
  )

  dynamic "wait" {
    for_each = var.wait == null ? [] : [var.wait]
    content {
      http    = "http://127.0.0.1:${each.value.serve_port}${wait.value.path}"
      timeout = wait.value.timeout
    }
  }

  # The container holds the display device: the module is reloaded before
  # it starts and restored only after it is gone. A fit check deferred to
  # apply (the model's size unknown at plan) runs before it starts. With Ray
  # it starts once the head lists every node.
  depends_on = [kmod_module.display, node_memory_fit.serve, node_command.ray_ready]
}

output "model_commit" {
  description = "The hub commit each node serves."
  value       = { for k, m in hubstage_manifest.model : k => m.commit }
}

output "containers" {
  description = "Container id per node."
  value       = { for k, c in docker_container.serve : k => c.id }
}
