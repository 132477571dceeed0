locals {
  t1 = "Hello $${name}!"
  t2 = "%%{ for x in xs }$${x},%%{ endfor }"
  t3 = "$${missing}"
  t4 = "$${upper(a)}"
  t5 = "plain"
  t6 = "$${templatestring(x, {})}"
}
