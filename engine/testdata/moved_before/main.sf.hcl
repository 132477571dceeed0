resource "sparkform_data" "a" {
  count = 2
  input = "v${count.index}"
}

resource "sparkform_data" "c" {
  input = "c"
}
