resource "sparkform_data" "b" {
  count = 2
  input = count.index == 1 ? "changed" : "v${count.index}"
}

resource "sparkform_data" "c" {
  input = "c"
}

moved {
  from = sparkform_data.a
  to   = sparkform_data.b
}
