# sparkform quickstart: the seed recipe's shape on one machine, no GPU, no
# network. run.sh prepares a kit repository and a tiny hub in var.workdir
# and runs plan, apply, show and destroy against this file.

variable "workdir" {
  description = "The folder run.sh prepared: kit-repo/ (git), hub/ (a Hugging Face hub cache) and node/ (where things are staged)."
  type        = string
}

variable "kit_commit" {
  description = "The kit repository's commit to stage (full 40-hex id)."
  type        = string
}

variable "docker" {
  description = "Whether a Docker Engine is here: then a container serves the staged kit and model."
  type        = bool
  default     = false
}

variable "image" {
  description = "A local image with /bin/busybox (run.sh builds it FROM scratch)."
  default     = "sparkform-quickstart/serve:1"
}

variable "container_name" {
  description = "The container's name (run.sh gives each run its own, so two demos on one host never clash)."
  default     = "sparkform-quickstart"
}

# This machine, reached without SSH.
node "local" {
  transport = "local"
}

# A runtime kit: the runtime/ folder of the repository at a pinned commit.
resource "gitkit_checkout" "kit" {
  node   = node.local
  repo   = "${var.workdir}/kit-repo"
  commit = var.kit_commit
  subdir = "runtime"
  path   = "${var.workdir}/node/kit"
}

# A per-file bind list of the hub snapshot refs/main points at: every file
# resolved through the hub's symlinks to the real blob.
resource "hubstage_manifest" "model" {
  node     = node.local
  hub_dir  = "${var.workdir}/hub"
  repo_id  = "demo/tiny-model"
  revision = "main"
  target   = "/model"
}

# The serving container, with the seed's kind of limits (scaled down).
resource "docker_container" "serve" {
  count        = var.docker ? 1 : 0
  node         = node.local
  name         = var.container_name
  image        = var.image
  entrypoint   = ["/bin/busybox", "sh", "/opt/kit/serving/serve.sh"]
  env          = { MODEL_DIR = "/model" }
  memory       = "64m"
  memory_swap  = "64m" # no swap
  cpus         = 0.5
  stop_timeout = 2

  mount {
    source    = "${gitkit_checkout.kit.path}/serving"
    target    = "/opt/kit/serving"
    read_only = true
  }
  bind_files = hubstage_manifest.model.files

  wait {
    log_line = "^ready"
    timeout  = "30s"
  }
}

output "kit_digest" {
  description = "What is staged at the kit path."
  value       = gitkit_checkout.kit.tree_digest
}

output "model" {
  description = "The hub commit and how many files are bound."
  value       = "${hubstage_manifest.model.commit} (${hubstage_manifest.model.file_count} files)"
}

output "container" {
  description = "The serving container's id, when Docker is here."
  value       = one(docker_container.serve[*].id)
}
