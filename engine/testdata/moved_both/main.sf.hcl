resource "sparkform_data" "a" {
  input = "a"
}

resource "sparkform_data" "b" {
  input = "b"
}
