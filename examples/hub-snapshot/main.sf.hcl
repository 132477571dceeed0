# A model on every node without a NAS: each node fetches one hub snapshot
# into its own hub cache (hubstage_snapshot, the huggingface_hub layout),
# and a per-file bind manifest resolves the exact commit the node got
# (hubstage_manifest with revision = the snapshot's commit: a dependency,
# no shared folder). The hub is HF_ENDPOINT of sparkform's environment
# (default https://huggingface.co); a gated repo's token is read from the
# environment variable HF_TOKEN and reaches the node on stdin only.
#
#   export HF_TOKEN=hf_...                     # only for gated repositories
#   sparkform plan -var-file nodes.tfvars      # commit, bytes present / to fetch, free space
#   sparkform apply -var-file nodes.tfvars
#
# With two Sparks, the second can copy the first's snapshot over the
# cluster link instead (no byte through this machine):
#
#   resource "hubstage_snapshot" "peer" {
#     node           = node.spark["b"]
#     hub_dir        = "/var/cache/huggingface/hub"
#     repo_id        = var.repo_id
#     revision       = hubstage_snapshot.model["a"].commit
#     source_node    = node.spark["a"]
#     source_address = "10.10.0.1" # a's address on the 200G link
#   }
#
# modules/spark-recipe does that for a whole recipe (model_source).

variable "nodes" {
  description = "Per node key: SSH host and port, and the hub cache folder on it."
  type = map(object({
    host    = string
    port    = optional(number, 22)
    hub_dir = optional(string, "/var/cache/huggingface/hub")
  }))
}
variable "user" {
  default = null
}
variable "identity_file" {
  default = null
}
variable "known_hosts" {
  default = null
}
variable "repo_id" {
  description = "The hub repository, ORG/NAME."
  type        = string
}
variable "revision" {
  description = "A branch, tag or 40-hex commit."
  type        = string
  default     = "main"
}
variable "keep_free" {
  description = "Space to leave free on each hub_dir's filesystem: plan refuses a snapshot that would not leave it."
  type        = string
  default     = "1GiB"
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

resource "hubstage_snapshot" "model" {
  for_each  = var.nodes
  node      = node.spark[each.key]
  hub_dir   = each.value.hub_dir
  repo_id   = var.repo_id
  revision  = var.revision
  keep_free = var.keep_free
}

resource "hubstage_manifest" "model" {
  for_each = var.nodes
  node     = node.spark[each.key]
  hub_dir  = hubstage_snapshot.model[each.key].hub_dir
  repo_id  = hubstage_snapshot.model[each.key].repo_id
  revision = hubstage_snapshot.model[each.key].commit
  target   = "/model"
}

output "commit" {
  description = "The commit each node holds."
  value       = { for k, s in hubstage_snapshot.model : k => s.commit }
}

output "files" {
  description = "Per node: the real blob of every file and its path under /model (docker_container.bind_files takes it)."
  value       = { for k, m in hubstage_manifest.model : k => m.files }
}
