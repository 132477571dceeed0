resource "sparkform_data" "b" {
  input = "b"
}

moved {
  from = sparkform_data.a
  to   = sparkform_data.b
}
