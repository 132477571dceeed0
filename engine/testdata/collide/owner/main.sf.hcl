variable "host" {}
variable "owns" {
  type = string
}
resource "sftest_thing" "mine" {
  node  = var.host
  value = "m"
  owns  = var.owns
}
resource "sftest_thing" "unknown" {
  node  = var.host
  owns  = sftest_thing.mine.id
}
