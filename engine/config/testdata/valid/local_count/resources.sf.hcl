resource "gitkit_checkout" "kit" {
  count  = var.replicas
  node   = node.here
  repo   = "/srv/git/kit.git"
  commit = "878e0eecd893fadc69ad2d58b2df0fabb0fae2ee"
  path   = "${local.base}/${count.index}"

  lifecycle {
    prevent_destroy       = true
    create_before_destroy = true
    ignore_changes        = all
  }
}

output "first_kit" {
  value       = gitkit_checkout.kit[0].path
  description = "Where the first kit lives."
  sensitive   = false
}

output "unit" {
  value     = local.unit
  sensitive = true
}
