variable "nodes" {
  description = "The 1 node(s) the recipe runs on, keyed by name: SSH host and port, rank (0 .. 0, one each), the home folder holding the kit and caches, the serving port, and the address the other nodes reach its sshd at over the cluster link (cluster_address; null: host), which model copies from rank 0 use. Give them with -var or a var file."
  type = map(object({
    host            = string
    rank            = number
    port            = optional(number, 22)
    home            = optional(string, "/home/kilork")
    serve_port      = optional(number, 8000)
    cluster_address = optional(string)
  }))
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

