package jsonconfig

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/engine/config"
)

// TestMarshal: resources with their references (count, for_each, node,
// nested blocks, depends_on), module calls with the called module, and
// no literal or sensitive default written.
func TestMarshal(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"main.sf.hcl": `
variable "tok" {
  default   = "hunter2"
  sensitive = true
}
variable "n" {
  default     = 2
  description = "how many"
}
node "local" {
  transport = "local"
}
resource "docker_container" "c" {
  count = var.n
  node  = node.local
  name  = "c${count.index}"
  image = "literal-image"
  env   = { TOKEN = var.tok }
  mount {
    source = sparkform_data.a.output
    target = "/x"
  }
  depends_on = [sparkform_data.a]
}
resource "sparkform_data" "a" {
  input = "x"
}
module "m" {
  for_each = toset(["k"])
  source   = "./mod"
  v        = each.key
}
output "o" {
  value     = docker_container.c[0].id
  sensitive = true
}
`,
		"mod/main.sf.hcl": `
variable "v" {
  type = string
}
resource "sparkform_data" "in" {
  input = var.v
}
`,
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mod, ds := config.LoadDir(dir)
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	b, err := json.Marshal(Marshal(mod))
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, bad := range []string{"hunter2", "literal-image"} {
		if strings.Contains(got, bad) {
			t.Errorf("%q is written:\n%s", bad, got)
		}
	}
	for _, want := range []string{
		`"provider_config":{"docker":{"name":"docker","full_name":"docker"},"module.m:sparkform":{"name":"sparkform","full_name":"sparkform","module_address":"module.m"},"sparkform":{"name":"sparkform","full_name":"sparkform"}}`,
		`"address":"docker_container.c","mode":"managed","type":"docker_container","name":"c","provider_config_key":"docker"`,
		`"count_expression":{"references":["var.n"]}`,
		`"env":{"references":["var.tok"]}`,
		`"mount":{"references":["sparkform_data.a.output","sparkform_data.a"]}`,
		`"name":{"references":["count.index"]}`,
		`"node":{"references":["node.local"]}`,
		`"depends_on":["sparkform_data.a"]`,
		`"for_each_expression":{}`,
		`"v":{"references":["each.key"]}`,
		`"module":{"resources":[{"address":"sparkform_data.in"`,
		`"o":{"sensitive":true,"expression":{"references":["docker_container.c[0].id","docker_container.c[0]","docker_container.c"]}}`,
		`"n":{"default":2,"description":"how many"}`,
		`"tok":{"sensitive":true}`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %s in:\n%s", want, got)
		}
	}
}
