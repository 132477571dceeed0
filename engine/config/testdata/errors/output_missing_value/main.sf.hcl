output "x" {
  description = "nothing"
}
