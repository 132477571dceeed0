# Ray recipes (recipe.distributed_backend = "ray"): the Ray cluster vLLM's
# Ray executor runs on, as the community runs it on Sparks (vLLM's
# run_cluster.sh, sparkrun's vllm-ray runtime):
#
#   rank 0:  docker_container.ray_head    ray start --head --block --port=PORT --node-ip-address=IP
#   rank k:  docker_container.ray_worker  ray start --block --address=HEAD_IP:PORT --node-ip-address=IP
#   rank 0:  node_command.ray_ready       waits until `ray status` in the head lists every node
#   rank 0:  docker_container.serve       the server (a Ray driver): RAY_ADDRESS=HEAD_IP:PORT
#
# The head and the workers run the recipe's image with the serving
# container's settings: the Ray workers are the processes that hold the
# GPUs and read the model. The server starts only when the head reports
# every node, and runs on rank 0 only; it reaches its node's raylet through
# the head's temp dir (/tmp/ray), a folder on the node both containers
# bind (node_command.ray_tmp: made by sparkform, removed on destroy).
# Destroy goes the other way: the server, the wait, the workers, the head,
# the temp dir. With "mp" nothing here is created.

variable "ray" {
  description = <<-EOT
    The Ray cluster of a recipe with distributed_backend = "ray" (ignored otherwise):
      port          the head's GCS port (ray start --port), reached by the workers at rank 0's cluster_address (null: its host)
      program       the Ray CLI in the image (the head and worker containers' entrypoint)
      head_args     more `ray start` arguments for the head (e.g. "--num-gpus=1", "--include-dashboard=false")
      worker_args   more `ray start` arguments for the workers
      env           more environment for the head and worker containers (after env; e.g. RAY_memory_monitor_refresh_ms = "0")
      temp_dir      the folder on rank 0 bound at /tmp/ray in the head and the server; sparkform makes it (it must not exist)
                    and removes it on destroy; null: /tmp/sparkform-ray-NAME
      start_timeout how long the head may take to listen on its port ("90s", "2m")
      ready_timeout how long every node may take to join the head ("30s", "10m", "1h")
  EOT
  type = object({
    port          = optional(number, 6379)
    program       = optional(string, "ray")
    head_args     = optional(list(string), [])
    worker_args   = optional(list(string), [])
    env           = optional(map(string), {})
    temp_dir      = optional(string)
    start_timeout = optional(string, "2m")
    ready_timeout = optional(string, "10m")
  })
  default = {}

  validation {
    condition     = var.ray.port >= 1 && var.ray.port <= 65535 && floor(var.ray.port) == var.ray.port
    error_message = "ray.port is a TCP port (1-65535), not ${var.ray.port}."
  }
  validation {
    condition     = var.ray.temp_dir == null || can(regex("^/[A-Za-z0-9._/-]*[A-Za-z0-9._-]$", var.ray.temp_dir)) && !strcontains("${coalesce(var.ray.temp_dir, "/x")}/", "/../")
    error_message = "ray.temp_dir is an absolute folder path on rank 0 (letters, digits, . _ - and /; no .. step, not /): sparkform makes it and removes it on destroy."
  }
  validation {
    condition     = can(regex("^[0-9]+[smh]$", var.ray.ready_timeout)) && can(regex("^[0-9]+[smh]$", var.ray.start_timeout))
    error_message = "ray.start_timeout and ray.ready_timeout are a whole number of seconds, minutes or hours: \"90s\", \"10m\", \"1h\"."
  }
}

locals {
  ray_on      = var.recipe.distributed_backend == "ray"
  ray_nodes   = local.ray_on ? local.nodes : {}
  ray_head    = { for k, n in local.ray_nodes : k => n if n.rank == 0 }
  ray_workers = { for k, n in local.ray_nodes : k => n if n.rank != 0 }
  # The address each node's Ray listens on and is reached at: the cluster
  # link (cluster_address) when given, else the node's host; a local node
  # is this machine.
  ray_ip      = { for k, n in local.nodes : k => coalesce(n.cluster_address, n.node.host, "127.0.0.1") }
  ray_address = local.ray_on ? "${local.ray_ip[local.rank0]}:${var.ray.port}" : null
  ray_tmp     = coalesce(var.ray.temp_dir, "/tmp/sparkform-ray-${var.name}")
  ray_ready_s = tonumber(regex("^([0-9]+)[smh]$", var.ray.ready_timeout)[0]) * { s = 1, m = 60, h = 3600 }[substr(var.ray.ready_timeout, -1, 1)]
  ray_env     = merge(var.env, var.ray.env)

  # Where docker_container.serve runs: with Ray on rank 0 only (the other
  # ranks' GPUs are the workers'), else on every node.
  serve_nodes = local.ray_on ? local.ray_head : local.nodes
  # The server's layout flags with Ray: the Ray executor places the ranks
  # itself, so mp's --nnodes, --node-rank and --master-addr are left out.
  ray_layout = local.ray_on ? [
    "--tensor-parallel-size", tostring(var.recipe.tensor_parallel_size),
    "--pipeline-parallel-size", tostring(var.recipe.pipeline_parallel_size),
    "--distributed-executor-backend", "ray",
    "--port", tostring(local.nodes[local.rank0].serve_port),
  ] : []
  # The server's environment with Ray: the cluster to join as a driver.
  ray_serve_env = local.ray_on ? { RAY_ADDRESS = local.ray_address, VLLM_HOST_IP = local.ray_ip[local.rank0] } : {}

  # Counts the live nodes of `ray status` output: the " 1 node_<id>" lines
  # under "Active:" and "Idle:" (Ray 2.x lists a node with nothing
  # running under Idle where its autoscaler status has that section).
  ray_count = <<-EOT
    active() { awk '/^(Active|Idle):/ {a = 1; next} /^[A-Za-z]/ {a = 0} a && $2 ~ /^node_/ {c++} END {print c + 0}'; }
    command -v docker >/dev/null 2>&1 || { echo "docker CLI not found on the node: the Ray wait runs docker exec HEAD ray status" >&2; exit 127; }
  EOT
}

# The head's temp dir on rank 0, shared with the server. Ray writes it as
# root: removing it needs become on the node.
resource "node_command" "ray_tmp" {
  for_each       = local.ray_head
  node           = each.value.node
  become         = each.value.node.become
  env            = { RAY_TMP = local.ray_tmp }
  create_script  = <<-EOT
    if [ -e "$RAY_TMP" ] || [ -L "$RAY_TMP" ]; then
      echo "$RAY_TMP is already there: sparkform makes the Ray head's temp dir itself and removes it on destroy, so it does not take one it did not make. Remove it, or set ray.temp_dir to another path." >&2
      exit 1
    fi
    mkdir -m 0755 -- "$RAY_TMP"
  EOT
  check_script   = "test -d \"$RAY_TMP\""
  destroy_script = <<-EOT
    rm -rf -- "$RAY_TMP" && exit 0
    echo "cannot remove $RAY_TMP (the Ray head wrote it as root): set become = true on the node, or remove it by hand (sudo rm -rf $RAY_TMP)" >&2
    exit 1
  EOT
}

resource "docker_container" "ray_head" {
  for_each   = local.ray_head
  node       = each.value.node
  name       = "${var.name}-ray-head"
  image      = docker_image.serve[each.key].name
  entrypoint = [var.ray.program]
  command = concat([
    "start", "--head", "--block",
    "--port=${var.ray.port}",
    "--node-ip-address=${local.ray_ip[each.key]}",
    "--disable-usage-stats",
  ], var.ray.head_args)
  env         = merge(local.ray_env, { VLLM_HOST_IP = local.ray_ip[each.key] })
  memory      = var.memory
  memory_swap = var.memory != null && !var.swap ? var.memory : null
  cpus        = var.cpus
  shm_size    = var.shm_size

  # The container a Spark needs, as the server's (variables.sf.hcl).
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
  mount {
    source = local.ray_tmp
    target = "/tmp/ray"
  }

  bind_files = concat(
    var.model == null ? [] : hubstage_manifest.model[each.key].files,
    var.drafter == null ? [] : hubstage_manifest.draft[each.key].files,
  )

  # The workers join only once the head listens.
  wait {
    tcp     = local.ray_address
    timeout = var.ray.start_timeout
  }

  depends_on = [kmod_module.display, node_memory_fit.serve, node_command.ray_tmp]
}

resource "docker_container" "ray_worker" {
  for_each   = local.ray_workers
  node       = each.value.node
  name       = "${var.name}-ray-r${each.value.rank}"
  image      = docker_image.serve[each.key].name
  entrypoint = [var.ray.program]
  command = concat([
    "start", "--block",
    "--address=${local.ray_address}",
    "--node-ip-address=${local.ray_ip[each.key]}",
  ], var.ray.worker_args)
  env         = merge(local.ray_env, { VLLM_HOST_IP = local.ray_ip[each.key] })
  memory      = var.memory
  memory_swap = var.memory != null && !var.swap ? var.memory : null
  cpus        = var.cpus
  shm_size    = var.shm_size

  # The container a Spark needs, as the server's (variables.sf.hcl).
  gpus         = local.gpus
  devices      = local.devices[each.key]
  network_mode = var.network_mode
  ipc_mode     = var.ipc_mode
  ulimits      = var.ulimits
  privileged   = var.privileged
  # A new head is a new cluster: the workers start again to join it.
  labels = { "sparkform.ray-head" = docker_container.ray_head[local.rank0].id }

  dynamic "mount" {
    for_each = var.mounts
    content {
      source           = replace(replace(mount.value.source, "{home}", each.value.home), "{kit}", var.kit == null ? "" : gitkit_checkout.kit[each.key].path)
      target           = mount.value.target
      read_only        = mount.value.read_only
      create_host_path = mount.value.create_host_path
    }
  }

  bind_files = concat(
    var.model == null ? [] : hubstage_manifest.model[each.key].files,
    var.drafter == null ? [] : hubstage_manifest.draft[each.key].files,
  )

  depends_on = [kmod_module.display, node_memory_fit.serve]
}

# Rank 0 waits until the head lists every node; refresh asks again, so a
# node that left is drift (the wait runs again at the next apply).
resource "node_command" "ray_ready" {
  for_each = local.ray_head
  node     = each.value.node
  become   = each.value.node.become
  env = {
    RAY_HEAD     = docker_container.ray_head[each.key].name
    RAY_PROGRAM  = var.ray.program
    RAY_NODES    = tostring(length(local.ray_nodes))
    RAY_WAIT     = tostring(local.ray_ready_s)
    HEAD_ADDRESS = local.ray_address
    RAY_WORKERS  = join(", ", [for k, n in local.ray_workers : "${var.name}-ray-r${n.rank} on ${k}"])
  }
  timeout = "${local.ray_ready_s + 60}s"
  # A new head or worker is a new cluster to wait for.
  triggers_replace = {
    head    = docker_container.ray_head[each.key].id
    workers = { for k, w in docker_container.ray_worker : k => w.id }
  }
  create_script = <<-EOT
    ${local.ray_count}
    end=$(( $(date +%s) + RAY_WAIT ))
    while :; do
      out=$(docker exec "$RAY_HEAD" "$RAY_PROGRAM" status 2>&1)
      n=$(printf '%s\n' "$out" | active)
      if [ "$n" -ge "$RAY_NODES" ]; then
        echo "Ray cluster ready: the head lists $n of $RAY_NODES nodes"
        exit 0
      fi
      if [ "$(date +%s)" -ge "$end" ]; then
        printf '%s\n' "$out" >&2
        echo "The Ray head ($RAY_HEAD) lists $n of $RAY_NODES nodes after $RAY_WAIT s: every worker must reach the head at $HEAD_ADDRESS (the cluster link: rank 0's cluster_address, else its host; ray.port). See docker logs of the workers: $RAY_WORKERS." >&2
        exit 1
      fi
      sleep 2
    done
  EOT
  check_script  = <<-EOT
    ${local.ray_count}
    n=$(docker exec "$RAY_HEAD" "$RAY_PROGRAM" status 2>/dev/null | active)
    [ "$n" -ge "$RAY_NODES" ]
  EOT
}

output "ray_address" {
  description = "The Ray head's address (HOST:PORT) of a Ray recipe; null with mp."
  value       = local.ray_address
}
