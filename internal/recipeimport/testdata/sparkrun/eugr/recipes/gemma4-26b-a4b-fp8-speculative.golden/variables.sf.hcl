variable "nodes" {
  description = "The 2 node(s) the recipe runs on, keyed by name: SSH host and port, rank (0 .. 1, one each), the home folder holding the kit and caches, the serving port, and the address the other nodes reach its sshd at over the cluster link (cluster_address; null: host), which model copies from rank 0 use. Give them with -var or a var file."
  type = map(object({
    host            = string
    rank            = number
    port            = optional(number, 22)
    home            = optional(string, "/home/kilork")
    serve_port      = optional(number, 8000)
    cluster_address = optional(string)
  }))
}

variable "hub_dir" {
  description = "The hub cache folder on every node the model snapshots are copied into (huggingface_hub's layout), mounted read-only in the container at /hub."
  type        = string
  default     = "/var/cache/huggingface/hub"
}

variable "model_source" {
  description = "Where the nodes get the model snapshots (modules/spark-recipe variable model_source): null means hub_dir already holds them (a shared folder); {} fetches them on rank 0 from the hub (HF_ENDPOINT, else https://huggingface.co; the token from HF_TOKEN) and copies rank 0's to the other ranks over the cluster link; { local_dir = \"~/.cache/huggingface/hub\" } pushes this machine's hub cache to rank 0; { node = ... } copies from another node."
  type = object({
    endpoint     = optional(string)
    token_env    = optional(string)
    local_dir    = optional(string)
    node         = optional(any)
    node_hub_dir = optional(string)
    node_address = optional(string)
    transfer     = optional(string)
    peers        = optional(string, "direct")
    keep_free    = optional(string)
    parallel     = optional(number)
  })
  default = {}
}

variable "user" {
  description = "The SSH user on every node (sudo -n for the kernel module and the Docker socket); null: the current user."
  default     = null
}

variable "identity_file" {
  description = "Private key for SSH; null uses the ssh-agent and ~/.ssh/id_ed25519, id_rsa."
  default     = null
}

variable "known_hosts" {
  description = "known_hosts file the node keys are checked against; null means ~/.ssh/known_hosts."
  default     = null
}

