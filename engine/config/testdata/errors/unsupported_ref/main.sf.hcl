output "x" {
  value = self.id
}
