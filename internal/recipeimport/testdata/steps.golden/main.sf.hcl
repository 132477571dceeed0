# a launcher recipe, imported by `sparkform recipe import` from steps.recipe.toml.
#
# Other shapes of the known steps, and steps nobody knows.

locals {
  args = []
  env = {
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

# The before_serve step (line 10) runs mods/warm-page-cache/run.sh of the recipe's repository, inlined here.
resource "node_command" "before_serve_2" {
  for_each = var.nodes
  node     = node.spark[each.key]
  become   = true
  # check: the script's hash, recorded on the node when it ran, is this script's.
  create_script = <<EOT
set -eu
/bin/sh -eu <<'SPARKFORM_MOD_EOF'
#!/bin/sh
# Read the model files once so that the first load is from the page cache.
find /data/hub -type f -name "*.safetensors" -exec cat {} + > /dev/null
SPARKFORM_MOD_EOF
mkdir -p '/var/lib/sparkform/steps'
printf '%s\n' 1cf07808f37c6e51a4a0c7d3d89a7f85df20fdaea026f20e31715da897b7b449 > '/var/lib/sparkform/steps/steps.before_serve_2'
EOT
  check_script  = "test \"$(cat '/var/lib/sparkform/steps/steps.before_serve_2' 2>/dev/null)\" = 1cf07808f37c6e51a4a0c7d3d89a7f85df20fdaea026f20e31715da897b7b449"
  destroy = [
    "rm",
    "-f",
    "/var/lib/sparkform/steps/steps.before_serve_2",
  ]
}

# before_serve step from line 12, kept as is: sparkform does not know what it does, so it cannot see drift or
# undo it by itself. Give it a check (exit 0 = done) and, for a before_serve step, a destroy.
resource "node_command" "before_serve_4" {
  for_each      = var.nodes
  node          = node.spark[each.key]
  create_script = <<EOT
echo ready > /tmp/ready
echo "$${HOME}" >> /tmp/ready
EOT
}

# after_stop step from line 16, kept as is: sparkform does not know what it does, so it cannot see drift or
# undo it by itself. Give it a check (exit 0 = done) and, for a before_serve step, a destroy.
resource "node_command" "after_stop_2" {
  for_each       = var.nodes
  node           = node.spark[each.key]
  create         = ["true"]
  destroy_script = "rm -f /tmp/ready"
}

module "recipe" {
  source = "./modules/spark-recipe"

  recipe = {
    required_nodes         = 2
    tensor_parallel_size   = 4
    pipeline_parallel_size = 1
    gpus_per_node          = 2
    distributed_backend    = "mp"
    nodes = { for k, n in var.nodes : k => {
      node            = node.spark[k]
      rank            = n.rank
      home            = n.home
      serve_port      = n.serve_port
      cluster_address = n.cluster_address
    } }
  }

  display_unlock = { module = "nvidia_drm", params = { fbdev = "0", modeset = "1" } }

  kit = {
    repo   = "https://git.example/kit.git"
    commit = "1111111111111111111111111111111111111111"
    subdir = "runtime"
    dir    = "kits/v1"
  }

  name  = "steps"
  image = "img:1"
  args  = local.args
  env   = local.env
  mounts = [
    { source = "{kit}", target = "/opt/kit", read_only = true },
  ]

  # The steps kept as commands run before the container starts and are undone after it stops.
  depends_on = [node_command.before_serve_2, node_command.before_serve_4, node_command.after_stop_2]
}

output "containers" {
  value = module.recipe.containers
}
