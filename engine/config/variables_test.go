package config

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

func loadVars(t *testing.T) *Module {
	t.Helper()
	m, diags := LoadDir("testdata/vars")
	if diags.HasErrors() {
		t.Fatal(render(diags))
	}
	return m
}

const nodesVar = "nodes={a={host=\"10.0.0.9\"}}"

func TestResolveVariablesPrecedence(t *testing.T) {
	m := loadVars(t)
	v := func(kind, val string) VarSource { return VarSource{Kind: kind, Value: val} }
	tests := []struct {
		name    string
		sources []VarSource
		env     []string
		want    map[string]cty.Value
	}{
		{"defaults", []VarSource{v("var", nodesVar)}, nil,
			map[string]cty.Value{"image": cty.StringVal("busybox:1.36"), "cpus": cty.NumberIntVal(2), "devices": cty.ListValEmpty(cty.String)}},
		{"env over default", []VarSource{v("var", nodesVar)}, []string{"SPARKFORM_VAR_image=from-env", "SPARKFORM_VAR_cpus=4", "HOME=/root"},
			map[string]cty.Value{"image": cty.StringVal("from-env"), "cpus": cty.NumberIntVal(4)}},
		{"-var over env", []VarSource{v("var", nodesVar), v("var", "image=from-flag")}, []string{"SPARKFORM_VAR_image=from-env"},
			map[string]cty.Value{"image": cty.StringVal("from-flag")}},
		{"file over env", []VarSource{v("file", "testdata/vars/a.sfvars.hcl")}, []string{"SPARKFORM_VAR_image=from-env"},
			map[string]cty.Value{"image": cty.StringVal("from-a"), "cpus": cty.NumberIntVal(3)}},
		{"later file wins", []VarSource{v("file", "testdata/vars/a.sfvars.hcl"), v("file", "testdata/vars/b.sfvars.hcl")}, nil,
			map[string]cty.Value{"image": cty.StringVal("from-b"), "cpus": cty.NumberIntVal(3)}},
		{"-var after file wins", []VarSource{v("file", "testdata/vars/a.sfvars.hcl"), v("var", "image=flag")}, nil,
			map[string]cty.Value{"image": cty.StringVal("flag")}},
		{"file after -var wins", []VarSource{v("var", "image=flag"), v("file", "testdata/vars/a.sfvars.hcl")}, nil,
			map[string]cty.Value{"image": cty.StringVal("from-a")}},
		{"json file, list type", []VarSource{v("file", "testdata/vars/c.json")}, nil,
			map[string]cty.Value{"devices": cty.ListVal([]cty.Value{cty.StringVal("/dev/dri/card0")})}},
		{"-var list parsed as HCL", []VarSource{v("var", nodesVar), v("var", `devices=["/dev/a", "/dev/b"]`)}, nil,
			map[string]cty.Value{"devices": cty.ListVal([]cty.Value{cty.StringVal("/dev/a"), cty.StringVal("/dev/b")})}},
		{"env list parsed as HCL", []VarSource{v("var", nodesVar)}, []string{`SPARKFORM_VAR_devices=["/dev/x"]`},
			map[string]cty.Value{"devices": cty.ListVal([]cty.Value{cty.StringVal("/dev/x")})}},
		{"value with = kept whole", []VarSource{v("var", nodesVar), v("var", "image=a=b")}, nil,
			map[string]cty.Value{"image": cty.StringVal("a=b")}},
		{"optional attribute default", []VarSource{v("var", nodesVar)}, nil,
			map[string]cty.Value{"nodes": cty.MapVal(map[string]cty.Value{"a": cty.ObjectVal(map[string]cty.Value{
				"host": cty.StringVal("10.0.0.9"), "rank": cty.NumberIntVal(0)})})}},
		{"null default", []VarSource{v("var", nodesVar)}, nil,
			map[string]cty.Value{"token": cty.NullVal(cty.String)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, diags := ResolveVariables(m, tt.sources, tt.env)
			for _, d := range diags {
				if d.Severity == 1 || !strings.Contains(d.Summary, "undeclared") {
					t.Errorf("unexpected diagnostic: %s", render(diags))
				}
			}
			if len(got) != len(m.Variables) {
				t.Errorf("got %d values, want %d", len(got), len(m.Variables))
			}
			for name, want := range tt.want {
				if !got[name].RawEquals(want) {
					t.Errorf("%s = %#v, want %#v", name, got[name], want)
				}
			}
		})
	}
}

func TestResolveVariablesErrors(t *testing.T) {
	m := loadVars(t)
	v := func(kind, val string) VarSource { return VarSource{Kind: kind, Value: val} }
	tests := []struct {
		name    string
		sources []VarSource
		env     []string
		want    string // in render() output
	}{
		{"missing required", nil, nil, `main.sf.hcl:19:1: error: No value for required variable: Variable "nodes" has no default, so it needs a value: pass -var 'nodes=VALUE'`},
		{"unknown -var", []VarSource{v("var", nodesVar), v("var", "imgae=x")}, nil, `-: error: Value for undeclared variable: -var sets "imgae", but the configuration declares no variable of that name. Did you mean "image"?`},
		{"-var without =", []VarSource{v("var", nodesVar), v("var", "image")}, nil, `-var "image" is not NAME=VALUE`},
		{"number conversion", []VarSource{v("var", nodesVar), v("var", "cpus=six")}, nil, `The value of var.cpus from -var cpus does not match its type number: a number is required.`},
		{"file type error points at file", []VarSource{v("var", nodesVar), v("file", "testdata/vars/bad_type.sfvars.hcl")}, nil, `bad_type.sfvars.hcl:1:8: error: Invalid value for variable`},
		{"nested type error names the path", []VarSource{v("var", "nodes={a={hots=1}}")}, nil, `does not match its type map(object({host=string,rank=number})): element "a": attribute "host" is required.`},
		{"bad HCL in -var", []VarSource{v("var", "nodes={a=")}, nil, "<value for -var nodes>:1:4: error: Missing expression: Expected the start of an expression, but found the end of the file.\n"},
		{"validation", []VarSource{v("var", nodesVar), v("var", "cpus=8")}, nil, `main.sf.hcl:9:21: error: Invalid value for variable: The serving guard allows 1 to 6 CPUs.` + "\n\nThis was checked by the validation rule at testdata/vars/main.sf.hcl:8:3."},
		{"validation on env value", []VarSource{v("var", nodesVar)}, []string{"SPARKFORM_VAR_cpus=0"}, `The serving guard allows 1 to 6 CPUs.`},
		{"missing file", []VarSource{v("var", nodesVar), v("file", "testdata/vars/nope.hcl")}, nil, `Cannot read variables file: open testdata/vars/nope.hcl: no such file or directory.`},
		{"bad kind", []VarSource{v("var", nodesVar), v("env", "x")}, nil, `kind "env" is not "var" or "file"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := ResolveVariables(m, tt.sources, tt.env)
			if !diags.HasErrors() {
				t.Fatal("no error")
			}
			if got := render(diags); !strings.Contains(got, tt.want) {
				t.Errorf("diagnostics\n%s\ndo not contain\n%s", got, tt.want)
			}
		})
	}
}

func TestResolveVariablesWarningsAndIgnores(t *testing.T) {
	m := loadVars(t)
	// Undeclared env variables are ignored; undeclared file ones warn.
	_, diags := ResolveVariables(m, []VarSource{{"var", nodesVar}, {"file", "testdata/vars/b.sfvars.hcl"}}, []string{"SPARKFORM_VAR_other=1"})
	if diags.HasErrors() || len(diags) != 1 {
		t.Fatalf("want one warning, got:\n%s", render(diags))
	}
	if got := render(diags); !strings.Contains(got, `b.sfvars.hcl:2:1: warning: Value for undeclared variable`) || !strings.Contains(got, `Did you mean "image"?`) {
		t.Errorf("warning: %s", got)
	}
	if _, ok := m.Files["testdata/vars/b.sfvars.hcl"]; !ok {
		t.Error("var file not added to Module.Files for snippets")
	}
}

func TestResolveVariablesPrompt(t *testing.T) {
	m := loadVars(t)
	var asked []string
	got, diags := ResolveVariablesPrompt(m, nil, nil, func(v *Variable) (string, bool) {
		asked = append(asked, v.Name)
		return `{b = {host = "h", rank = 1}}`, true
	})
	if diags.HasErrors() {
		t.Fatal(render(diags))
	}
	if len(asked) != 1 || asked[0] != "nodes" {
		t.Errorf("asked for %v, want only the required nodes", asked)
	}
	if h := got["nodes"].Index(cty.StringVal("b")).GetAttr("host"); !h.RawEquals(cty.StringVal("h")) {
		t.Errorf("nodes = %#v", got["nodes"])
	}
	// A prompt that gets no answer is the usual error.
	_, diags = ResolveVariablesPrompt(m, nil, nil, func(*Variable) (string, bool) { return "", false })
	if !diags.HasErrors() || diags[0].Summary != "No value for required variable" {
		t.Errorf("no answer: %s", render(diags))
	}
	if !m.Variables["token"].Sensitive {
		t.Error("sensitive flag lost")
	}
}
