resource "gitkit_checkout" "kit" {
  path = "/opt/kit"
}
