package addrs

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

func TestInstanceStrings(t *testing.T) {
	r := Resource{Type: "gitkit_checkout", Name: "kit"}
	tests := []struct {
		got, want string
	}{
		{r.String(), "gitkit_checkout.kit"},
		{r.Instance(NoKey).String(), "gitkit_checkout.kit"},
		{r.Instance(nil).String(), "gitkit_checkout.kit"},
		{r.Instance(IntKey(3)).String(), "gitkit_checkout.kit[3]"},
		{r.Instance(StringKey("spark-01")).String(), `gitkit_checkout.kit["spark-01"]`},
		{r.Instance(StringKey(`a"b\c` + "\n${x}")).String(), `gitkit_checkout.kit["a\"b\\c\n$${x}"]`},
		{NodeBlock{Name: "spark"}.Instance(StringKey("a")).String(), `node.spark["a"]`},
		{NodeBlock{Name: "spark"}.Instance(NoKey).String(), `node.spark`},
		{InputVariable{Name: "nodes"}.String(), "var.nodes"},
		{LocalValue{Name: "kit"}.String(), "local.kit"},
		{EachKey{}.String(), "each.key"},
		{EachValue{}.String(), "each.value"},
		{CountIndex{}.String(), "count.index"},
		{PathAttr{Name: "module"}.String(), "path.module"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %s, want %s", tt.got, tt.want)
		}
	}
	if NoKey.Value() != cty.NilVal || !IntKey(2).Value().RawEquals(cty.NumberIntVal(2)) || !StringKey("a").Value().RawEquals(cty.StringVal("a")) {
		t.Error("key values wrong")
	}
	// Keys are comparable map keys.
	m := map[InstanceKey]int{NoKey: 1, IntKey(0): 2, StringKey("0"): 3}
	if m[NoKey] != 1 || m[IntKey(0)] != 2 || m[StringKey("0")] != 3 {
		t.Error("keys collide")
	}
}

func TestParseTargetRoundTrip(t *testing.T) {
	for _, s := range []string{
		"gitkit_checkout.kit", "gitkit_checkout.kit[0]", `gitkit_checkout.kit["spark-01"]`,
		`docker_container.c["a\"b\\c\n$${x}%%{y}"]`, `docker_container.c["héllo wörld"]`,
	} {
		ri, diags := ParseResourceInstance(s)
		if diags.HasErrors() {
			t.Errorf("%s: %s", s, diags.Error())
			continue
		}
		if ri.String() != s {
			t.Errorf("round trip %s -> %s", s, ri.String())
		}
	}
	r, k, diags := ParseTarget("kmod_module.nvidia_drm")
	if diags.HasErrors() || k != nil || r != (Resource{Type: "kmod_module", Name: "nvidia_drm"}) {
		t.Errorf("whole resource: %v %v %v", r, k, diags)
	}
	ri, _ := ParseResourceInstance("kmod_module.nvidia_drm")
	if ri.Key != NoKey {
		t.Errorf("no key should be NoKey, got %#v", ri.Key)
	}
	_, k, _ = ParseTarget(`kmod_module.nvidia_drm["x"]`)
	if k != StringKey("x") {
		t.Errorf("key = %#v", k)
	}
}

func TestParseTargetErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "the address is empty"},
		{"kit", "it must have a type, a name"},
		{"gitkit_checkout.kit.path", "only a [KEY] may follow"},
		{"gitkit_checkout.kit[0][1]", "at most one key"},
		{"var.nodes", `"var" is not a resource type`},
		{"node.spark", `"node" is not a resource type`},
		{"gitkit_checkout.kit[-1]", "literal number or a literal string"},
		{"gitkit_checkout.kit[1.5]", "whole number >= 0"},
		{"gitkit_checkout.kit[true]", "literal number or a literal string"},
		{`gitkit_checkout.kit["a`, "not a resource address"},
		{"1abc.x", "not a resource address"},
	}
	for _, tt := range tests {
		_, diags := ParseResourceInstance(tt.in)
		if !diags.HasErrors() {
			t.Errorf("%q: no error", tt.in)
			continue
		}
		if d := diags[0].Detail; !strings.Contains(d, tt.want) || !strings.Contains(d, "TYPE.NAME[KEY]") {
			t.Errorf("%q: detail %q does not contain %q and the expected form", tt.in, d, tt.want)
		}
	}
}

func parseTrav(t *testing.T, s string) hcl.Traversal {
	t.Helper()
	tr, diags := hclsyntax.ParseTraversalAbs([]byte(s), "t.sf.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("%s: %s", s, diags.Error())
	}
	return tr
}

func TestParseRef(t *testing.T) {
	tests := []struct {
		in        string
		subject   Referenceable
		key       InstanceKey
		remaining int
		endCol    int // SourceRange end column
	}{
		{"var.nodes", InputVariable{"nodes"}, nil, 0, 10},
		{`var.nodes["a"].host`, InputVariable{"nodes"}, nil, 2, 10},
		{"local.kit", LocalValue{"kit"}, nil, 0, 10},
		{"node.spark", NodeBlock{"spark"}, nil, 0, 11},
		{`node.spark["spark-01"].host`, NodeBlock{"spark"}, StringKey("spark-01"), 1, 23},
		{"gitkit_checkout.kit[0].path", Resource{Type: "gitkit_checkout", Name: "kit"}, IntKey(0), 1, 23},
		{"gitkit_checkout.kit.path", Resource{Type: "gitkit_checkout", Name: "kit"}, nil, 1, 20},
		{"each.key", EachKey{}, nil, 0, 9},
		{"each.value.host", EachValue{}, nil, 1, 11},
		{"count.index", CountIndex{}, nil, 0, 12},
		{"path.module", PathAttr{"module"}, nil, 0, 12},
		{"path.cwd", PathAttr{"cwd"}, nil, 0, 9},
	}
	for _, tt := range tests {
		ref, diags := ParseRef(parseTrav(t, tt.in))
		if diags.HasErrors() {
			t.Errorf("%s: %s", tt.in, diags.Error())
			continue
		}
		if ref.Subject != tt.subject || ref.Key != tt.key || len(ref.Remaining) != tt.remaining {
			t.Errorf("%s: got %#v key %#v remaining %d", tt.in, ref.Subject, ref.Key, len(ref.Remaining))
		}
		if ref.SourceRange.Start.Column != 1 || ref.SourceRange.End.Column != tt.endCol {
			t.Errorf("%s: range %s, want end column %d", tt.in, ref.SourceRange, tt.endCol)
		}
	}
}

func TestParseRefErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"var", `"var" object cannot be used on its own`},
		{`var["x"]`, `"var" object cannot be used on its own`},
		{"local", "name the local value"},
		{"node", "node.spark[each.key]"},
		{"each.name", "each.key and each.value"},
		{"count.idx", "count.index"},
		{"path.home", "path.module"},
		{"self.id", "no \"self\" object"},
		{"data.x.y", "no data sources"},
		{"module", "module.dsv41.OUTPUT"},
		{"locals.x", "local.NAME"},
		{"vars", `Did you mean "var"?`},
		{"gitkit_checkout", "TYPE.NAME"},
	}
	for _, tt := range tests {
		_, diags := ParseRef(parseTrav(t, tt.in))
		if !diags.HasErrors() {
			t.Errorf("%q: no error", tt.in)
			continue
		}
		if !strings.Contains(diags[0].Detail, tt.want) {
			t.Errorf("%q: detail %q lacks %q", tt.in, diags[0].Detail, tt.want)
		}
		if diags[0].Subject == nil || diags[0].Subject.Filename != "t.sf.hcl" {
			t.Errorf("%q: no subject range", tt.in)
		}
	}
}

func TestReferences(t *testing.T) {
	expr, diags := hclsyntax.ParseExpression([]byte(`"${var.a}-${node.spark[each.key].host}-${self.x}-${gitkit_checkout.kit["a"].path}"`), "t.sf.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	refs, diags := References(expr.Variables())
	if len(diags) != 1 || len(refs) != 4 {
		t.Fatalf("refs %d diags %d: %v", len(refs), len(diags), diags)
	}
	want := []string{"var.a", "node.spark", "each.key", `gitkit_checkout.kit["a"]`}
	for i, r := range refs {
		if r.DisplayString() != want[i] {
			t.Errorf("ref %d = %s, want %s", i, r.DisplayString(), want[i])
		}
	}
}

func TestSuggest(t *testing.T) {
	tests := []struct {
		given string
		cands []string
		want  string
	}{
		{"hots", []string{"host", "port", "user"}, "host"},
		{"node", []string{"nodes"}, "nodes"},
		{"xyzzy", []string{"host", "port"}, ""},
		{"vars", []string{"var", "local"}, "var"},
		{"Host", []string{"host"}, "host"},
		{"ab", []string{"ba", "aa"}, "aa"}, // tie: alphabetically first
	}
	for _, tt := range tests {
		if got := Suggest(tt.given, tt.cands); got != tt.want {
			t.Errorf("Suggest(%q) = %q, want %q", tt.given, got, tt.want)
		}
	}
}

func TestKeyFromValue(t *testing.T) {
	tests := []struct {
		v    cty.Value
		want InstanceKey
		err  string
	}{
		{cty.StringVal("a"), StringKey("a"), ""},
		{cty.NumberIntVal(2), IntKey(2), ""},
		{cty.NumberFloatVal(1.5), nil, "whole number"},
		{cty.NumberIntVal(-1), nil, "whole number"},
		{cty.True, nil, "string or number"},
		{cty.NullVal(cty.String), nil, "known"},
		{cty.UnknownVal(cty.String), nil, "known"},
	}
	for _, tt := range tests {
		k, err := KeyFromValue(tt.v)
		if tt.err == "" && (err != nil || k != tt.want) {
			t.Errorf("%#v: %v %v", tt.v, k, err)
		}
		if tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%#v: err %v, want %q", tt.v, err, tt.err)
		}
	}
}

func TestModuleAddresses(t *testing.T) {
	for _, s := range []string{
		`module.dsv41.kmod_module.display["spark-01"]`,
		`module.dsv41["a"].kmod_module.display`,
		`module.r[0].module.inner["x.y"].gitkit_checkout.kit[2]`,
	} {
		ri, diags := ParseResourceInstance(s)
		if diags.HasErrors() {
			t.Errorf("%s: %s", s, diags.Error())
			continue
		}
		if ri.String() != s {
			t.Errorf("round trip %s -> %s", s, ri.String())
		}
	}
	ri, _ := ParseResourceInstance(`module.dsv41["a"].kmod_module.display["spark-01"]`)
	if ri.Resource.Module != `module.dsv41["a"]` || ri.Resource.Type != "kmod_module" || ri.Key != StringKey("spark-01") {
		t.Errorf("parsed %#v", ri)
	}
	if got := ri.Resource.ScopeKey(); got != `module.dsv41["a"].display` {
		t.Errorf("scope key %s", got)
	}
	tests := []struct {
		in     string
		module string
		res    string
	}{
		{"module.second", "module.second", ""},
		{`module.second["x"]`, `module.second["x"]`, ""},
		{"module.a.module.b", "module.a.module.b", ""},
		{`module.a.kmod_module.x["k"]`, "module.a", "module.a.kmod_module.x"},
		{"kmod_module.x", "", "kmod_module.x"},
	}
	for _, tt := range tests {
		tg, diags := ParseTargetAny(tt.in)
		if diags.HasErrors() {
			t.Errorf("%s: %s", tt.in, diags.Error())
			continue
		}
		res := ""
		if tg.Resource != nil {
			res = tg.Resource.String()
		}
		if tg.Module != tt.module || res != tt.res {
			t.Errorf("%s: got module %q resource %q", tt.in, tg.Module, res)
		}
	}
	for _, bad := range []string{"module", "module.a.b", `module["x"]`} {
		if _, diags := ParseTargetAny(bad); !diags.HasErrors() {
			t.Errorf("%q parsed", bad)
		}
	}
	within := []struct {
		addr, mod string
		want      bool
	}{
		{`module.a["x"].t.n`, "module.a", true},
		{`module.a.t.n`, "module.a", true},
		{`module.ab.t.n`, "module.a", false},
		{`module.a["x2"].t.n`, `module.a["x"]`, false},
		{`module.a["x"].module.b.t.n`, `module.a["x"]`, true},
		{`t.n`, "module.a", false},
	}
	for _, w := range within {
		if got := WithinModule(w.addr, w.mod); got != w.want {
			t.Errorf("WithinModule(%s, %s) = %v", w.addr, w.mod, got)
		}
	}
	if s := (NodeBlock{Name: `module.a["x"].spark`}).Instance(StringKey("n1")).String(); s != `module.a["x"].node.spark["n1"]` {
		t.Errorf("module node renders %s", s)
	}
}

func TestParseFlatRefs(t *testing.T) {
	tests := []struct {
		in      string
		subject Referenceable
		key     InstanceKey
	}{
		{`local["module.a.var.x"].y`, LocalValue{`module.a.var.x`}, nil},
		{`node["module.a.spark"]["n"]`, NodeBlock{`module.a.spark`}, StringKey("n")},
		{`kmod_module["module.a[\"k.1\"].display"][0].name`, Resource{Type: "kmod_module", Name: "display", Module: `module.a["k.1"]`}, IntKey(0)},
		{`module.m["a"].out`, ModuleCall{"m"}, StringKey("a")},
		{`module.m.out`, ModuleCall{"m"}, nil},
	}
	for _, tt := range tests {
		ref, diags := ParseRef(parseTrav(t, tt.in))
		if diags.HasErrors() {
			t.Errorf("%s: %s", tt.in, diags.Error())
			continue
		}
		if ref.Subject != tt.subject || ref.Key != tt.key {
			t.Errorf("%s: got %#v key %#v", tt.in, ref.Subject, ref.Key)
		}
	}
}

// TestResourceAppendKey: AppendKey appends exactly String, module prefix
// included, after what buf holds.
func TestResourceAppendKey(t *testing.T) {
	for _, r := range []Resource{
		{Type: "gitkit_checkout", Name: "kit"},
		{Module: `module.m["a"]`, Type: "sparkform_data", Name: "r0"},
	} {
		if got := string(r.AppendKey([]byte("x:"))); got != "x:"+r.String() {
			t.Errorf("AppendKey = %q, want %q", got, "x:"+r.String())
		}
	}
}
