package config

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// writeTree writes files (path -> content) under a new temporary folder.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func flatten(t *testing.T, files map[string]string, vars map[string]cty.Value) (*Module, hcl.Diagnostics) {
	t.Helper()
	m, diags := LoadDir(writeTree(t, files))
	if diags.HasErrors() {
		return nil, diags
	}
	if d := m.CheckReferences(); d.HasErrors() {
		return nil, d
	}
	return Flatten(m, vars)
}

const recipeModule = `
variable "nodes" { type = set(string) }
variable "tag" {
  type    = string
  default = "dflt"
}
locals { l = "${var.tag}!" }
node "n" {
  for_each  = var.nodes
  transport = "local"
}
resource "sparkform_data" "a" {
  for_each = var.nodes
  node     = node.n[each.key]
  input    = local.l
}
resource "sparkform_data" "b" {
  for_each = var.nodes
  input    = sparkform_data.a[each.key].output
}
module "leaf" {
  source = "../leaf"
  v      = sparkform_data.b
}
output "o" { value = module.leaf.out }
`

const leafModule = `
variable "v" {}
resource "sparkform_data" "c" { input = var.v }
output "out" { value = sparkform_data.c.id }
`

// TestFlattenAddresses: every module instance's blocks are in the flat
// module under their full addresses, with references rewritten to the
// instance's own blocks.
func TestFlattenAddresses(t *testing.T) {
	flat, diags := flatten(t, map[string]string{
		"main.sf.hcl": `
variable "recipes" {}
module "r" {
  source   = "./modules/r"
  for_each = var.recipes
  nodes    = each.value
}
module "c" {
  source = "./modules/r"
  count  = 2
  nodes  = ["x"]
  tag    = "c${count.index}"
}
resource "sparkform_data" "root" {
  input      = module.r["one"].o
  depends_on = [module.c[1]]
}
output "all" { value = module.r }
`,
		"modules/r/main.sf.hcl":    recipeModule,
		"modules/leaf/main.sf.hcl": leafModule,
	}, map[string]cty.Value{"recipes": cty.ObjectVal(map[string]cty.Value{
		"one": cty.SetVal([]cty.Value{cty.StringVal("s1"), cty.StringVal("s2")}),
		"two": cty.SetVal([]cty.Value{cty.StringVal("s3")}),
	})})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	var got []string
	for k := range flat.Resources {
		got = append(got, k)
	}
	sort.Strings(got)
	want := []string{
		`module.c[0].module.leaf.sparkform_data.c`, `module.c[0].sparkform_data.a`, `module.c[0].sparkform_data.b`,
		`module.c[1].module.leaf.sparkform_data.c`, `module.c[1].sparkform_data.a`, `module.c[1].sparkform_data.b`,
		`module.r["one"].module.leaf.sparkform_data.c`, `module.r["one"].sparkform_data.a`, `module.r["one"].sparkform_data.b`,
		`module.r["two"].module.leaf.sparkform_data.c`, `module.r["two"].sparkform_data.a`, `module.r["two"].sparkform_data.b`,
		`sparkform_data.root`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("resources:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, ok := flat.Nodes[`module.r["two"].n`]; !ok {
		t.Errorf("module node missing: %v", flat.Nodes)
	}
	// References inside an instance name that instance's blocks (the
	// body is the module's, shared: its scope maps them).
	b := flat.Resources[`module.r["two"].sparkform_data.b`]
	var refs []string
	for _, tr := range b.Scope.Flat(BodyReferences(b.Body(), nil)) {
		refs = append(refs, traversalString(tr))
	}
	if j := strings.Join(refs, " "); !strings.Contains(j, `sparkform_data["module.r[\"two\"].a"]`) || !strings.Contains(j, `local["module.r[\"two\"].var.nodes"]`) {
		t.Errorf("refs of b: %v", refs)
	}
	a := flat.Resources[`module.r["two"].sparkform_data.a`]
	if tr := a.NodeExpr.Variables(); len(tr) != 2 || tr[0].RootName() != "node" {
		t.Errorf("node ref of a: %#v", tr)
	} else if ix, ok := tr[0][1].(hcl.TraverseIndex); !ok || ix.Key.AsString() != `module.r["two"].n` {
		t.Errorf("node ref of a: %#v", tr[0])
	}
	// The root's depends_on on a module instance became its resources.
	root := flat.Resources["sparkform_data.root"]
	var deps []string
	for _, tr := range root.DependsOn {
		ix := tr[1].(hcl.TraverseIndex)
		deps = append(deps, tr.RootName()+"|"+ix.Key.AsString())
	}
	sort.Strings(deps)
	wantDeps := []string{`sparkform_data|module.c[1].a`, `sparkform_data|module.c[1].b`, `sparkform_data|module.c[1].module.leaf.c`}
	if strings.Join(deps, " ") != strings.Join(wantDeps, " ") {
		t.Errorf("depends_on = %v, want %v", deps, wantDeps)
	}
	// Input variables evaluate in the caller's scope with the instance's
	// each/count, converted and defaulted.
	ctx := (&Scope{BaseDir: flat.Dir}).EvalContext()
	for name, want := range map[string]cty.Value{
		`module.c[1].var.tag`:       cty.StringVal("c1"),
		`module.r["one"].var.tag`:   cty.StringVal("dflt"),
		`module.r["two"].var.nodes`: cty.SetVal([]cty.Value{cty.StringVal("s3")}),
	} {
		l, ok := flat.Locals[name]
		if !ok {
			t.Errorf("no local %s", name)
			continue
		}
		if len(l.Expr.Variables()) > 0 {
			t.Errorf("%s: each/count should be bound, got references %v", name, l.Expr.Variables())
		}
		v, d := l.Expr.Value(ctx)
		if d.HasErrors() || !v.RawEquals(want) {
			t.Errorf("%s = %#v %v, want %#v", name, v, d, want)
		}
	}
	for _, name := range []string{"module.r", `module.r["one"]`, "module.c", "module.c[0]", `module.r["one"].module.leaf`, `module.r["one"].output.o`, `module.c[0].path.module`} {
		if _, ok := flat.Locals[name]; !ok {
			t.Errorf("no local %s", name)
		}
	}
}

func TestFlattenErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		vars  map[string]cty.Value
		want  []string
	}{
		{"self call", map[string]string{"main.sf.hcl": `module "me" { source = "./" }`},
			nil, []string{"Module cycle", "root (", "-> module.me ("}},
		{"mutual", map[string]string{
			"main.sf.hcl":   `module "a" { source = "./a" }`,
			"a/main.sf.hcl": `module "b" { source = "../b" }`,
			"b/main.sf.hcl": `module "a_again" { source = "../a" }`,
		}, nil, []string{"module.a (", "-> module.b (", "-> module.a_again ("}},
		{"remote source", map[string]string{"main.sf.hcl": `module "m" { source = "git::https://x/y" }`},
			nil, []string{"local folders only"}},
		{"missing folder", map[string]string{"main.sf.hcl": `module "m" { source = "./nope" }`},
			nil, []string{"Cannot load module m", "fix source"}},
		{"unknown argument", map[string]string{"main.sf.hcl": `module "m" {
  source = "./m"
  tga    = 1
}`, "m/main.sf.hcl": `variable "tag" { default = 1 }`}, nil, []string{`Unsupported argument`, `Did you mean "tag"`}},
		{"missing argument", map[string]string{"main.sf.hcl": `module "m" { source = "./m" }`, "m/main.sf.hcl": `variable "tag" {}`},
			nil, []string{"Missing required argument", `needs the argument "tag"`}},
		{"undeclared output", map[string]string{"main.sf.hcl": `module "m" { source = "./m" }
output "x" { value = module.m.yse }`, "m/main.sf.hcl": `output "yes" { value = 1 }`},
			nil, []string{"Reference to undeclared module output", `Did you mean "yes"`}},
		{"undeclared module", map[string]string{"main.sf.hcl": `output "x" { value = module.m.o }`},
			nil, []string{"Reference to undeclared module"}},
		{"for_each from a resource", map[string]string{"main.sf.hcl": `resource "sparkform_data" "d" {}
module "m" {
  source   = "./m"
  for_each = sparkform_data.d.output
}`, "m/main.sf.hcl": `output "o" { value = 1 }`},
			map[string]cty.Value{}, []string{"Invalid module for_each", "must be known before the plan"}},
		// A sensitive variable is refused in a call's for_each and count
		// as in a resource's (instance keys are printed), directly,
		// through a local, with sensitive(), and from a module's own
		// sensitive variable in a nested call.
		{"for_each from a sensitive variable", map[string]string{"main.sf.hcl": `variable "keys" {
  type      = set(string)
  sensitive = true
}
module "m" {
  source   = "./m"
  for_each = var.keys
}`, "m/main.sf.hcl": `output "o" { value = 1 }`},
			map[string]cty.Value{"keys": cty.SetVal([]cty.Value{cty.StringVal("hunter2")})}, []string{"Invalid for_each argument", "sensitive", "main.sf.hcl:7"}},
		{"count from a sensitive variable via a local", map[string]string{"main.sf.hcl": `variable "n" {
  type      = number
  sensitive = true
}
locals { n = var.n + 1 }
module "m" {
  source = "./m"
  count  = local.n
}`, "m/main.sf.hcl": `output "o" { value = 1 }`},
			map[string]cty.Value{"n": cty.NumberIntVal(2)}, []string{"Invalid count argument", "sensitive", "main.sf.hcl:8"}},
		{"for_each from sensitive()", map[string]string{"main.sf.hcl": `module "m" {
  source   = "./m"
  for_each = sensitive(toset(["a"]))
}`, "m/main.sf.hcl": `output "o" { value = 1 }`},
			map[string]cty.Value{}, []string{"Invalid for_each argument", "sensitive"}},
		{"nested for_each from a module's sensitive variable", map[string]string{"main.sf.hcl": `module "m" {
  source = "./m"
  keys   = ["a"]
}`, "m/main.sf.hcl": `variable "keys" {
  type      = set(string)
  sensitive = true
}
module "inner" {
  source   = "../leaf"
  for_each = var.keys
}`, "leaf/main.sf.hcl": `output "o" { value = 1 }`},
			map[string]cty.Value{}, []string{"Invalid for_each argument", "sensitive", "main.sf.hcl:7"}},
		{"validate: for_each from a sensitive default", map[string]string{"main.sf.hcl": `variable "keys" {
  type      = set(string)
  default   = ["a"]
  sensitive = true
}
module "m" {
  source   = "./m"
  for_each = var.keys
}`, "m/main.sf.hcl": `output "o" { value = 1 }`},
			nil, []string{"Invalid for_each argument", "sensitive"}},
		{"bad key", map[string]string{"main.sf.hcl": `module "m" {
  source = "./m"
  count  = 1
}
output "x" { value = module.m[3].o }`, "m/main.sf.hcl": `output "o" { value = 1 }`},
			map[string]cty.Value{}, []string{"Reference to undeclared module instance", "module.m[3]"}},
		{"key on a single call", map[string]string{"main.sf.hcl": `module "m" { source = "./m" }
output "x" { value = module.m["a"].o }`, "m/main.sf.hcl": `output "o" { value = 1 }`},
			nil, []string{"Invalid instance key", "has no for_each"}},
		{"undeclared inside module", map[string]string{"main.sf.hcl": `module "m" { source = "./m" }`,
			"m/main.sf.hcl": `output "o" { value = sparkform_data.root.id }`},
			nil, []string{"Reference to undeclared resource"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := flatten(t, tt.files, tt.vars)
			if !diags.HasErrors() {
				t.Fatal("no error")
			}
			msg := diags.Error()
			for _, d := range diags {
				if d.Subject != nil {
					msg += "\n" + d.Subject.String()
				}
				msg += "\n" + d.Detail
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q not in:\n%s", w, msg)
				}
			}
			if diags[0].Subject == nil {
				t.Errorf("no source range: %s", diags[0].Error())
			}
		})
	}
}

// TestFlattenValidation: a module argument is converted to its variable's
// type and checked by the variable's validation, per instance, and the
// error points at the caller's argument.
func TestFlattenValidation(t *testing.T) {
	flat, diags := flatten(t, map[string]string{
		"main.sf.hcl": `module "m" {
  source   = "./m"
  for_each = { ok = 8, bad = 3 }
  n        = each.value
}`,
		"m/main.sf.hcl": `variable "n" {
  type = number
  validation {
    condition     = var.n % 2 == 0
    error_message = "n must be even, not ${var.n}."
  }
}`,
	}, map[string]cty.Value{})
	// Known before the plan, so Flatten itself refuses it.
	if len(diags) != 1 || !strings.Contains(diags[0].Detail, "n must be even, not 3.") || !strings.Contains(diags[0].Detail, `module.m["bad"]`) {
		t.Fatalf("flatten: %v", diags)
	}
	ctx := (&Scope{BaseDir: flat.Dir}).EvalContext()
	if v, d := flat.Locals[`module.m["ok"].var.n`].Expr.Value(ctx); d.HasErrors() || !v.RawEquals(cty.NumberIntVal(8)) {
		t.Errorf("ok: %#v %v", v, d)
	}
	_, d := flat.Locals[`module.m["bad"].var.n`].Expr.Value(ctx)
	if !d.HasErrors() || !strings.Contains(d[0].Detail, "n must be even, not 3.") || !strings.Contains(d[0].Detail, `module.m["bad"]`) ||
		d[0].Subject == nil || d[0].Subject.Start.Line != 4 {
		t.Errorf("bad: %v", d)
	}
}

// TestFlattenNoModules: a root without module blocks is returned as is.
func TestFlattenNoModules(t *testing.T) {
	m, diags := LoadDir(writeTree(t, map[string]string{"main.sf.hcl": `resource "sparkform_data" "x" {}`}))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if flat, _ := Flatten(m, nil); flat != m {
		t.Error("a root without modules was copied")
	}
}

func TestMovedBlocks(t *testing.T) {
	m, diags := LoadDir(writeTree(t, map[string]string{"main.sf.hcl": `
moved {
  from = kmod_module.display
  to   = module.dsv41["a"].kmod_module.display
}
moved {
  from = module.old
  to   = module.new["x"]
}`}))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if len(m.Moved) != 2 || m.Moved[0].To.Resource.String() != `module.dsv41["a"].kmod_module.display` || m.Moved[1].From.Module != "module.old" {
		t.Errorf("moved: %#v %#v", m.Moved[0], m.Moved[1])
	}
	for src, want := range map[string]string{
		`moved {
  from = kmod_module.x
  to   = gitkit_checkout.x
}`: "cannot change a resource's type",
		`moved {
  from = kmod_module.x
  to   = module.m
}`: "a resource to a resource, or a module to a module",
		`moved {
  from = kmod_module.x["a"]
  to   = kmod_module.y
}`: "both name a whole resource",
	} {
		_, diags := LoadDir(writeTree(t, map[string]string{"main.sf.hcl": src}))
		if !diags.HasErrors() || !strings.Contains(diags[0].Detail, want) {
			t.Errorf("%s: %v", src, diags)
		}
	}
}

// TestFlattenInstancesShareModuleSyntax: every instance of a module called
// with for_each takes the module's bodies and expressions as loaded (one
// parsed copy), and each evaluates them in its own names.
func TestFlattenInstancesShareModuleSyntax(t *testing.T) {
	m, diags := LoadDir(writeTree(t, map[string]string{
		"main.sf.hcl": `
variable "items" {}
module "m" {
  source   = "./mod"
  for_each = var.items
  seed     = each.value
}
output "firsts" { value = module.m["k1"].last }
`,
		"mod/main.sf.hcl": `
variable "seed" {}
locals { l = "${var.seed}-local" }
node "n" {
  transport = "local"
}
resource "sparkform_data" "a" {
  node  = node.n
  input = local.l
}
resource "sparkform_data" "b" {
  node  = node.n
  input = sparkform_data.a.output
}
output "last" { value = sparkform_data.b.output }
`,
	}))
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	const k = 200
	items := map[string]cty.Value{}
	for i := 0; i < k; i++ {
		items[fmt.Sprint("k", i)] = cty.StringVal(fmt.Sprint("seed-", i))
	}
	flat, diags := Flatten(m, map[string]cty.Value{"items": cty.MapVal(items)})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	child := m.Children["m"]
	for key, r := range child.Resources {
		for i := 0; i < k; i++ {
			p := fmt.Sprintf(`module.m["k%d"]`, i)
			got := flat.Resources[p+"."+key]
			if got == nil {
				t.Fatalf("no %s.%s", p, key)
			}
			if got.Body() != r.Body() {
				t.Fatalf("%s.%s has a body of its own, want the module's (parsed once)", p, key)
			}
			if got.Scope.Prefix() != p {
				t.Fatalf("%s.%s: scope %q", p, key, got.Scope.Prefix())
			}
		}
	}
	if n := flat.Nodes[`module.m["k7"].n`]; n == nil || n.Config != child.Nodes["n"].Config {
		t.Errorf("module node: %#v, want the module's body", n)
	}
	// Instance k7's b: its references are k7's flat names, and its body
	// evaluates k7's values.
	b := flat.Resources[`module.m["k7"].sparkform_data.b`]
	var refs []string
	for _, tr := range b.Scope.Flat(BodyReferences(b.Body(), nil)) {
		refs = append(refs, traversalString(tr))
	}
	if j := strings.Join(refs, " "); j != `node["module.m[\"k7\"].n"] sparkform_data["module.m[\"k7\"].a"].output` {
		t.Errorf("refs of k7's b: %s", j)
	}
	flatCtx := &hcl.EvalContext{Variables: map[string]cty.Value{
		"sparkform_data": cty.ObjectVal(map[string]cty.Value{
			`module.m["k7"].a`: cty.ObjectVal(map[string]cty.Value{"output": cty.StringVal("a7")}),
			`module.m["k8"].a`: cty.ObjectVal(map[string]cty.Value{"output": cty.StringVal("a8")}),
		}),
	}}
	attrs, _ := b.Body().JustAttributes()
	if v, d := attrs["input"].Expr.Value(b.Scope.BodyContext(b.Body(), flatCtx)); d.HasErrors() || !v.RawEquals(cty.StringVal("a7")) {
		t.Errorf("k7's b input = %#v %v, want a7", v, d)
	}
	// A local of the module, wrapped for the instance.
	l := flat.Locals[`module.m["k7"].local.l`]
	if vars := l.Expr.Variables(); len(vars) != 1 || traversalString(vars[0]) != `local["module.m[\"k7\"].var.seed"]` {
		t.Errorf("k7's local.l references %v", vars)
	}
	v, d := l.Expr.Value(&hcl.EvalContext{Variables: map[string]cty.Value{
		"local": cty.ObjectVal(map[string]cty.Value{`module.m["k7"].var.seed`: cty.StringVal("seed-7")}),
	}})
	if d.HasErrors() || !v.RawEquals(cty.StringVal("seed-7-local")) {
		t.Errorf("k7's local.l = %#v %v", v, d)
	}
}

// TestFlattenValidationSensitive: a module argument from sensitive() is
// validated like any other (it used to panic: the condition's result is
// marked), and a failure does not show a message made from it.
func TestFlattenValidationSensitive(t *testing.T) {
	_, diags := flatten(t, map[string]string{
		"main.sf.hcl": `module "m" {
  source   = "./m"
  for_each = { ok = "hunter2", bad = "pw" }
  tok      = sensitive(each.value)
}`,
		"m/main.sf.hcl": `variable "tok" {
  type = string
  validation {
    condition     = length(var.tok) > 3
    error_message = "tok ${var.tok} is too short."
  }
}`,
	}, map[string]cty.Value{})
	if len(diags) != 1 || !strings.Contains(diags[0].Detail, `module.m["bad"]`) {
		t.Fatalf("want one error, for module.m[\"bad\"]: %v", diags)
	}
	if d := diags[0].Detail; strings.Contains(d, "pw is too short") || !strings.Contains(d, "failed its validation") || !strings.Contains(d, "sensitive value") {
		t.Errorf("the message: %s", d)
	}
}
