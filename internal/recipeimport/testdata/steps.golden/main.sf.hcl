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

# before_serve step from line 10, kept as is: sparkform does not know what it does, so it cannot see drift or
# undo it by itself. Give it a check (exit 0 = done) and, for a before_serve step, a destroy.
resource "node_command" "before_serve_2" {
  for_each      = var.nodes
  node          = node.spark[each.key]
  create_script = "warm_page_cache # a launcher script: install it on the nodes, or replace this with what it does"
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
