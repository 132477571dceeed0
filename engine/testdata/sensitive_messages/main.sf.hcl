# A sensitive value, short or long, given to a provider that repeats its
# value in progress and in errors (sftest_thing: sleep_ms reports
# progress, fail = "create" fails naming the value).
variable "tok" {
  type      = string
  sensitive = true
}

node "local" {
  transport = "local"
}

resource "sftest_thing" "t" {
  node     = node.local
  value    = var.tok
  key      = "k"
  sleep_ms = 1
  fail     = "create"
}
