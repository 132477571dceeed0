# sparkform_data lifecycle: single, for_each, count, references to values
# only apply knows (id), and outputs.
variable "input" {
  type    = string
  default = "one"
}
variable "trigger" {
  type    = string
  default = "t1"
}
variable "keys" {
  type    = list(string)
  default = ["a", "b"]
}
variable "n" {
  type    = number
  default = 2
}

node "local" {
  transport = "local"
}

resource "sparkform_data" "x" {
  node             = node.local
  input            = var.input
  triggers_replace = var.trigger
}

resource "sparkform_data" "each" {
  for_each = toset(var.keys)
  node     = node.local
  input    = "${each.key}-${sparkform_data.x.id}"
}

resource "sparkform_data" "counted" {
  count = var.n
  node  = node.local
  input = "c${count.index}"
}

output "x_id" {
  value = sparkform_data.x.id
}

output "each_inputs" {
  value = { for k, v in sparkform_data.each : k => v.output }
}
