package config

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/addrs"
)

var update = flag.Bool("update", false, "rewrite golden files")

// render formats diagnostics as file:line:col: summary: detail, one a line,
// with the file name only (fixtures move; messages must not).
func render(diags hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		sev := "error"
		if d.Severity == hcl.DiagWarning {
			sev = "warning"
		}
		loc := "-"
		if d.Subject != nil {
			loc = fmt.Sprintf("%s:%d:%d", filepath.Base(d.Subject.Filename), d.Subject.Start.Line, d.Subject.Start.Column)
		}
		fmt.Fprintf(&b, "%s: %s: %s: %s\n", loc, sev, d.Summary, d.Detail)
	}
	return b.String()
}

// validate is what `sparkform validate` does without providers: load, then
// check references when the structure is sound.
func validate(dir string) (*Module, hcl.Diagnostics) {
	m, diags := LoadDir(dir)
	if diags.HasErrors() {
		return m, diags
	}
	return m, append(diags, m.CheckReferences()...)
}

func TestLoadErrors(t *testing.T) {
	dirs, err := filepath.Glob("testdata/errors/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no error fixtures: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			m, diags := validate(dir)
			if !diags.HasErrors() {
				t.Fatalf("no error diagnostics for %s", dir)
			}
			for _, d := range diags {
				if d.Severity == hcl.DiagError && d.Subject == nil {
					t.Errorf("error without a source range: %s: %s", d.Summary, d.Detail)
				}
				if d.Subject != nil && m.Files[d.Subject.Filename] == nil {
					t.Errorf("diagnostic points at %s, which is not in Module.Files", d.Subject.Filename)
				}
			}
			got := render(diags)
			golden := filepath.Join(dir, "want.golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestLoadErrors -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("diagnostics differ from %s\n--- got\n%s--- want\n%s", golden, got, want)
			}
		})
	}
}

func TestLoadValid(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/valid/*")
	if len(dirs) == 0 {
		t.Fatal("no valid fixtures")
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			m, diags := validate(dir)
			if len(diags) > 0 {
				t.Fatalf("unexpected diagnostics:\n%s", render(diags))
			}
			if len(m.Files) == 0 {
				t.Fatal("no files recorded")
			}
		})
	}
}

func TestLoadSeed(t *testing.T) {
	m, diags := validate("testdata/valid/seed")
	if len(diags) > 0 {
		t.Fatalf("unexpected diagnostics:\n%s", render(diags))
	}
	var keys []string
	for k := range m.Resources {
		keys = append(keys, k)
	}
	if len(keys) != 4 {
		t.Fatalf("resources = %v, want 4", keys)
	}
	c := m.Resources["docker_container.ds41"]
	if c == nil {
		t.Fatal("docker_container.ds41 missing")
	}
	if c.Addr != (addrs.Resource{Type: "docker_container", Name: "ds41"}) {
		t.Errorf("addr = %v", c.Addr)
	}
	if c.ForEach == nil || c.Count != nil || c.NodeExpr == nil {
		t.Errorf("meta-arguments not split out: for_each=%v count=%v node=%v", c.ForEach, c.Count, c.NodeExpr)
	}
	if len(c.DependsOn) != 1 || c.DependsOn[0].RootName() != "kmod_module" {
		t.Errorf("depends_on = %v", c.DependsOn)
	}
	if len(c.Lifecycle.IgnoreChanges) != 1 || c.Lifecycle.IgnoreChanges[0][0].(hcl.TraverseAttr).Name != "env" {
		t.Errorf("ignore_changes = %v", c.Lifecycle.IgnoreChanges)
	}
	if c.TypeRange.Start.Line != 50 || c.TypeRange.Start.Column != 10 || c.DeclRange.Start.Line != 50 {
		t.Errorf("ranges: type %v decl %v", c.TypeRange, c.DeclRange)
	}
	// Meta-arguments are not part of the body the provider schema sees.
	attrs, _ := withoutMeta(c.Body()).JustAttributes()
	for _, meta := range []string{"node", "for_each", "depends_on"} {
		if _, ok := attrs[meta]; ok {
			t.Errorf("meta-argument %s left in Config", meta)
		}
	}
	v := m.Variables["nodes"]
	if v.Description != "The Spark nodes, by name." || !v.Type.IsMapType() {
		t.Errorf("variable nodes: %q %s", v.Description, v.Type.FriendlyName())
	}
	if v.Default.LengthInt() != 2 || !v.Default.Index(cty.StringVal("spark-02")).GetAttr("rank").RawEquals(cty.NumberIntVal(1)) {
		t.Errorf("default = %#v", v.Default)
	}
	n := m.Nodes["spark"]
	if n == nil || n.ForEach == nil {
		t.Fatal("node spark without for_each")
	}
	if _, ok := m.Locals["kit"]; !ok {
		t.Error("local kit missing")
	}
	if _, ok := m.Outputs["endpoints"]; !ok {
		t.Error("output endpoints missing")
	}
}

func TestLoadDirProblems(t *testing.T) {
	empty := t.TempDir()
	m, diags := LoadDir(empty)
	if m == nil || !diags.HasErrors() || !strings.Contains(diags[0].Detail, "no *.sf.hcl files") {
		t.Errorf("empty dir: %v", diags)
	}
	m, diags = LoadDir(filepath.Join(empty, "nope"))
	if m == nil || !diags.HasErrors() || diags[0].Summary != "Cannot read configuration directory" {
		t.Errorf("missing dir: %v", diags)
	}
	// Only *.sf.hcl files are read, in name order; others are ignored.
	dir := t.TempDir()
	write(t, dir, "b.sf.hcl", `variable "b" {}`)
	write(t, dir, "a.sf.hcl", `variable "a" {}`)
	write(t, dir, "c.tf", `this is not even HCL {`)
	m, diags = LoadDir(dir)
	if diags.HasErrors() || len(m.Variables) != 2 || len(m.Files) != 2 {
		t.Errorf("got %d variables, %d files, %v", len(m.Variables), len(m.Files), diags)
	}
	// A duplicate across files names both places.
	write(t, dir, "c.sf.hcl", `variable "a" {}`)
	_, diags = LoadDir(dir)
	if !diags.HasErrors() || !strings.Contains(diags[0].Detail, "a.sf.hcl:1:1") || !strings.HasSuffix(diags[0].Subject.Filename, "c.sf.hcl") {
		t.Errorf("duplicate across files: %s", render(diags))
	}
}

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadLocalCount(t *testing.T) {
	m, diags := validate("testdata/valid/local_count")
	if len(diags) > 0 {
		t.Fatal(render(diags))
	}
	r := m.Resources["gitkit_checkout.kit"]
	if r.Count == nil || r.ForEach != nil {
		t.Fatal("count not recorded")
	}
	lc := r.Lifecycle
	if !lc.PreventDestroy || !lc.CreateBeforeDestroy || !lc.IgnoreAllChanges || len(lc.IgnoreChanges) != 0 {
		t.Errorf("lifecycle = %+v", lc)
	}
	if o := m.Outputs["unit"]; !o.Sensitive || m.Outputs["first_kit"].Description != "Where the first kit lives." {
		t.Error("output metadata lost")
	}
	// The local evaluates with the scope's functions, relative to the module.
	vars, diags := ResolveVariables(m, nil, nil)
	if diags.HasErrors() {
		t.Fatal(render(diags))
	}
	ctx := (&Scope{BaseDir: m.Dir, Variables: vars}).EvalContext()
	v, diags := m.Locals["unit"].Expr.Value(ctx)
	if diags.HasErrors() || v.AsString() != "[Unit]\nDescription=demo\n" {
		t.Errorf("unit = %#v %s", v, diags.Error())
	}
	exp, diags := Expand(r.ForEach, r.Count, ctx)
	if diags.HasErrors() || len(exp.Keys) != 2 {
		t.Errorf("expansion %v %s", exp, diags.Error())
	}
}

func TestTraversalPath(t *testing.T) {
	m, _ := validate("testdata/valid/seed")
	p, err := TraversalPath(m.Resources["docker_container.ds41"].Lifecycle.IgnoreChanges[0])
	if err != nil {
		t.Fatal(err)
	}
	want := cty.GetAttrPath("env").Index(cty.StringVal("VLLM_CACHE_ROOT"))
	if !p.Equals(want) {
		t.Errorf("path = %#v, want %#v", p, want)
	}
}

func BenchmarkLoadSeed(b *testing.B) {
	for b.Loop() {
		m, diags := LoadDir("testdata/valid/seed")
		if diags.HasErrors() {
			b.Fatal(diags)
		}
		if d := m.CheckReferences(); d.HasErrors() {
			b.Fatal(d)
		}
	}
}

func BenchmarkScopeEvalContext(b *testing.B) {
	s := &Scope{BaseDir: ".", Variables: map[string]cty.Value{"a": cty.StringVal("x")}}
	for b.Loop() {
		s.EvalContext()
	}
}

// TestCheckReferencesOncePerRange: a resource's meta-arguments are in its
// remain body too, and each reference is reported once; the same mistake
// in another block is that block's own diagnostic.
func TestCheckReferencesOncePerRange(t *testing.T) {
	block := func(name string) string {
		return fmt.Sprintf("\nresource \"sparkform_data\" %q {\n  node       = node.nope\n  count      = var.nope\n  depends_on = [sparkform_data.missing]\n  input      = local.nope\n}\n", name)
	}
	dir := writeTree(t, map[string]string{"main.sf.hcl": block("a") + block("b")})
	_, diags := validate(dir)
	per := map[string]int{}
	for _, d := range diags {
		per[fmt.Sprintf("%s@%d", d.Summary, d.Subject.Start.Line)]++
	}
	for k, n := range per {
		if n != 1 {
			t.Errorf("%s reported %d times, want once", k, n)
		}
	}
	// node, var, resource and local, in each of the two blocks.
	if len(diags) != 8 || len(per) != 8 {
		t.Errorf("%d diagnostics (%d distinct), want 8:\n%s", len(diags), len(per), render(diags))
	}
}
