# The fault tests' configuration (e2e/faults_test.go, e2e/torture_test.go):
# the seed's shape per node, plus many sparkform_data, so kills land in
# every kind of window. Everything node-specific comes from variables.

variable "nodes" {
  description = "Per node key: host, port and home (the node's folder)."
  type        = map(object({ host = string, port = number, home = string }))
}
variable "user" {}
variable "identity_file" {}
variable "known_hosts" {}
variable "image" {}
variable "hub_dir" {}
variable "kit_repo" {}
variable "kit_commit" {}
variable "prefix" {
  description = "Container name prefix, unique per test run."
}
variable "cgroup_pids_max" {
  description = "pids.max of the group, or null where the cgroup v2 root has no pids controller."
  type        = string
  default     = null
}
variable "data_count" {
  type    = number
  default = 200
}

node "n" {
  for_each      = var.nodes
  host          = each.value.host
  port          = each.value.port
  user          = var.user
  identity_file = var.identity_file
  known_hosts   = var.known_hosts
  become        = true
}

resource "kmod_module" "drm" {
  for_each = var.nodes
  node     = node.n[each.key]
  name     = "nvidia_drm"
  params   = { modeset = "1", fbdev = "0" }
}

# In the machine's cgroup v2 root (SPARKFORM_KMOD_CGROUP_ROOT): the
# ancestor "PREFIX-KEY" is created by sparkform and recorded.
resource "kmod_cgroup" "serve" {
  for_each = var.nodes
  node     = node.n[each.key]
  path     = "${var.prefix}-${each.key}/serve"
  pids_max = var.cgroup_pids_max
}

resource "node_command" "marker" {
  for_each       = var.nodes
  node           = node.n[each.key]
  dir            = each.value.home
  create_script  = "mkdir -p cmd && echo staged > cmd/marker"
  check_script   = "[ -d cmd ]"
  destroy_script = "rm -rf cmd"
}

resource "gitkit_checkout" "kit" {
  for_each = var.nodes
  node     = node.n[each.key]
  repo     = var.kit_repo
  commit   = var.kit_commit
  subdir   = "release/runtime"
  path     = "${each.value.home}/kit/${substr(var.kit_commit, 0, 7)}"
}

resource "hubstage_manifest" "model" {
  for_each      = var.nodes
  node          = node.n[each.key]
  hub_dir       = var.hub_dir
  repo_id       = "coolbho3k/DeepSeek-V4.1-Flash-EXL3-3bpw"
  target        = "/model"
  manifest_path = "${each.value.home}/manifests/model/mounts.txt"
}

resource "docker_image" "img" {
  for_each = var.nodes
  node     = node.n[each.key]
  name     = var.image
}

resource "docker_container" "c" {
  for_each     = var.nodes
  node         = node.n[each.key]
  name         = "${var.prefix}-${each.key}"
  image        = docker_image.img[each.key].name
  entrypoint   = ["/bin/busybox", "sh", "-c", "trap 'exit 0' TERM; while :; do /bin/busybox sleep 1; done"]
  stop_timeout = 2
  bind_files   = hubstage_manifest.model[each.key].files
  mount {
    source    = "${gitkit_checkout.kit[each.key].path}/serving"
    target    = "/opt/kit"
    read_only = true
  }
  depends_on = [kmod_module.drm]
}

resource "sparkform_data" "d" {
  count = var.data_count
  input = { i = count.index }
}
