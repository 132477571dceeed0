package config

import (
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk"
)

func body(t *testing.T, src string) hcl.Body {
	t.Helper()
	f, diags := hclsyntax.ParseConfig([]byte(src), "b.sf.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return f.Body
}

func TestDecodeNode(t *testing.T) {
	home := t.TempDir() // no ~/.ssh/config here
	t.Setenv("HOME", home)
	me := currentUser()
	sc := filepath.Join(home, ".ssh/config")
	ctx := (&Scope{Variables: map[string]cty.Value{"host": cty.StringVal("10.0.0.5")}, Each: &EachValues{Key: cty.StringVal("a"), Value: cty.StringVal("x")}}).EvalContext()
	tests := []struct {
		src  string
		want NodeConfig
	}{
		{`host = "10.0.0.1"`, NodeConfig{Transport: "ssh", Host: "10.0.0.1", Port: 22, User: me, KnownHosts: filepath.Join(home, ".ssh/known_hosts"), SSHConfig: sc, Timeout: 15 * time.Second}},
		{`transport = "local"`, NodeConfig{Transport: "local", Port: 22, User: me, Timeout: 15 * time.Second}},
		{`
host          = var.host
port          = "2222"
user          = "kilork-${each.key}"
identity_file = "~/.ssh/id_ed25519"
known_hosts   = "/etc/ssh/kh"
become        = true
timeout       = "1m30s"
`, NodeConfig{Transport: "ssh", Host: "10.0.0.5", Port: 2222, User: "kilork-a", IdentityFile: filepath.Join(home, ".ssh/id_ed25519"), KnownHosts: "/etc/ssh/kh", SSHConfig: sc, Become: true, Timeout: 90 * time.Second}},
		{`
host = "h"
user = null
`, NodeConfig{Transport: "ssh", Host: "h", Port: 22, User: me, KnownHosts: filepath.Join(home, ".ssh/known_hosts"), SSHConfig: sc, Timeout: 15 * time.Second}},
	}
	for _, tt := range tests {
		got, diags := DecodeNode(body(t, tt.src), ctx)
		if diags.HasErrors() {
			t.Errorf("%s: %s", tt.src, diags.Error())
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.src, got, tt.want)
		}
	}
}

func TestDecodeNodeErrors(t *testing.T) {
	ctx := (&Scope{Variables: map[string]cty.Value{"later": cty.UnknownVal(cty.String)}}).EvalContext()
	tests := []struct{ src, want string }{
		{`hots = "h"`, `b.sf.hcl:1:1: error: Unsupported argument: An argument named "hots" is not expected here. Did you mean "host"?`},
		{`user = "u"`, `error: Missing node host: An ssh node needs host = "NAME_OR_ADDRESS". For this machine without SSH, set transport = "local".`},
		{"host = \"h\"\ntransport = \"telnet\"", `b.sf.hcl:2:13: error: Invalid node transport: transport "telnet" is not supported`},
		{"host = \"h\"\nport = 70000", `b.sf.hcl:2:8: error: Invalid node port: port must be a whole number from 1 to 65535, not 70000.`},
		{"host = \"h\"\nport = \"ssh\"", `b.sf.hcl:2:8: error: Invalid node argument: The node's port must be a number`},
		{"host = \"h\"\ntimeout = \"soon\"", `b.sf.hcl:2:11: error: Invalid node timeout: timeout "soon" is not a positive duration`},
		{"host = \"h\"\ntimeout = \"-1s\"", `not a positive duration`},
		{"host = var.later", `b.sf.hcl:1:8: error: Node argument not known in advance: The node's host must be known before anything is applied`},
		{"host = \"h\"\nbecome = \"maybe\"", `The node's become must be a bool`},
		{"host = \"h\"\nconnection {\n}", `Unsupported block type`},
	}
	for _, tt := range tests {
		_, diags := DecodeNode(body(t, tt.src), ctx)
		if got := render(diags); !diags.HasErrors() || !strings.Contains(got, tt.want) {
			t.Errorf("%q:\n%s\nwant %s", tt.src, got, tt.want)
		}
	}
}

func TestNodeValue(t *testing.T) {
	nc := NodeConfig{Transport: "ssh", Host: "h", Port: 2222, User: "u", IdentityFile: "/k", KnownHosts: "/kh", Become: true, Timeout: 20 * time.Second}
	v := NodeValue(`node.spark["a"]`, nc)
	want := map[string]cty.Value{
		"name": cty.StringVal(`node.spark["a"]`), "transport": cty.StringVal("ssh"), "host": cty.StringVal("h"),
		"port": cty.NumberIntVal(2222), "user": cty.StringVal("u"), "identity_file": cty.StringVal("/k"),
		"known_hosts": cty.StringVal("/kh"), "become": cty.True, "timeout": cty.StringVal("20s"),
		"ssh_config": cty.StringVal(""), "identity_files": cty.ListValEmpty(cty.String), "identities_only": cty.False,
		"proxy_jump": cty.ListValEmpty(HopType), "host_alias": cty.StringVal(""),
	}
	if len(v.Type().AttributeTypes()) != len(want) {
		t.Errorf("attributes: %v", v.Type().AttributeTypes())
	}
	for k, w := range want {
		if !v.GetAttr(k).RawEquals(w) {
			t.Errorf("%s = %#v, want %#v", k, v.GetAttr(k), w)
		}
	}
	if d, err := time.ParseDuration(v.GetAttr("timeout").AsString()); err != nil || d != nc.Timeout {
		t.Errorf("timeout does not round-trip: %v %v", d, err)
	}
}

// dockerBlock is a docker_container-like schema with nested blocks.
var dockerBlock = &sdk.Block{
	Attributes: map[string]*sdk.Attribute{
		"name":       {Type: cty.String, Required: true},
		"image":      {Type: cty.String, Required: true, ForceNew: true},
		"entrypoint": {Type: cty.List(cty.String), Optional: true},
		"env":        {Type: cty.Map(cty.String), Optional: true},
		"cpus":       {Type: cty.Number, Optional: true},
		"memory":     {Type: cty.String, Optional: true, Computed: true},
		"id":         {Type: cty.String, Computed: true},
		"bind_files": {Type: cty.List(cty.Object(map[string]cty.Type{"source": cty.String, "target": cty.String})), Optional: true},
	},
	BlockTypes: map[string]*sdk.NestedBlock{
		"mount": {Nesting: sdk.NestingList, Block: sdk.Block{Attributes: map[string]*sdk.Attribute{
			"source":    {Type: cty.String, Required: true},
			"target":    {Type: cty.String, Required: true},
			"read_only": {Type: cty.Bool, Optional: true},
		}}},
		"healthcheck": {Nesting: sdk.NestingSingle, Block: sdk.Block{Attributes: map[string]*sdk.Attribute{
			"test": {Type: cty.List(cty.String), Required: true},
		}}},
		"label": {Nesting: sdk.NestingSet, MaxItems: 2, Block: sdk.Block{Attributes: map[string]*sdk.Attribute{
			"key": {Type: cty.String, Required: true},
		}}},
	},
}

const containerSrc = `name       = "ds41"
image      = "busybox:${var.tag}"
entrypoint = ["/bin/sh", "-c", "sleep 1"]
env        = { A = "1", B = gitkit_checkout.kit[each.key].path }
cpus       = 6
mount {
  source    = "/hub"
  target    = "/hub"
  read_only = true
}
mount {
  source = "${gitkit_checkout.kit[each.key].path}/serving"
  target = "/opt/serving"
}
label {
  key = "a"
}
`

func containerCtx() *hcl.EvalContext {
	return (&Scope{
		Variables: map[string]cty.Value{"tag": cty.StringVal("1.36")},
		Resources: map[string]map[string]cty.Value{"gitkit_checkout": {"kit": cty.ObjectVal(map[string]cty.Value{
			"a": cty.ObjectVal(map[string]cty.Value{"path": cty.StringVal("/kit")}),
		})}},
		Each: &EachValues{Key: cty.StringVal("a"), Value: cty.StringVal("a")},
	}).EvalContext()
}

func TestDecodeResource(t *testing.T) {
	v, diags := DecodeResource(body(t, containerSrc), dockerBlock, containerCtx())
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	got, _ := ctyJSON(v)
	want := `{"bind_files":null,"cpus":6,"entrypoint":["/bin/sh","-c","sleep 1"],"env":{"A":"1","B":"/kit"},"healthcheck":null,` +
		`"image":"busybox:1.36","label":[{"key":"a"}],"memory":null,"mount":[{"read_only":true,"source":"/hub","target":"/hub"},` +
		`{"read_only":null,"source":"/kit/serving","target":"/opt/serving"}],"name":"ds41"}`
	if got != want {
		t.Errorf("decoded\n got %s\nwant %s", got, want)
	}
	if v.Type().HasAttribute("id") {
		t.Error("computed-only id must not be decoded from config")
	}
	// Unknown upstream values stay unknown ("known after apply").
	ctx := containerCtx()
	ctx.Variables["gitkit_checkout"] = cty.ObjectVal(map[string]cty.Value{"kit": cty.ObjectVal(map[string]cty.Value{
		"a": cty.ObjectVal(map[string]cty.Value{"path": cty.UnknownVal(cty.String)})})})
	v, diags = DecodeResource(body(t, containerSrc), dockerBlock, ctx)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if v.GetAttr("env").Index(cty.StringVal("B")).IsKnown() || !v.GetAttr("env").Index(cty.StringVal("A")).IsKnown() {
		t.Errorf("unknowns not kept: %#v", v.GetAttr("env"))
	}
}

func TestDecodeResourceErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{`image = "x"`, `b.sf.hcl:1:1: error: Missing required argument: The argument "name" is required, but no definition was found.`},
		{"name = \"a\"\nimage = \"x\"\nid = \"forced\"", `b.sf.hcl:3:1: error: Cannot set a computed attribute: "id" is set by the provider and can only be read`},
		{"name = \"a\"\nimgae = \"y\"", `b.sf.hcl:2:1: error: Unsupported argument: An argument named "imgae" is not expected here. Did you mean "image"?`},
		{"name = \"a\"\nimage = \"x\"\nmonut {\n}", `b.sf.hcl:3:1: error: Unsupported block type: Blocks of type "monut" are not expected here. Did you mean "mount"?`},
		{"name = \"a\"\nimage = \"x\"\ncpus = \"six\"", `b.sf.hcl:3:8: error: Incorrect attribute value type`},
		{"name = \"a\"\nimage = \"x\"\nmount {\n  source = \"/a\"\n}", `Missing required argument: The argument "target" is required`},
		{"name = \"a\"\nimage = \"x\"\nlabel {\n key = \"a\"\n}\nlabel {\n key = \"b\"\n}\nlabel {\n key = \"c\"\n}", `Too many label blocks`},
		{"name = \"a\"\nimage = \"x\"\nhealthcheck {\n test = []\n}\nhealthcheck {\n test = []\n}", `Duplicate healthcheck block`},
	}
	for _, tt := range tests {
		_, diags := DecodeResource(body(t, tt.src), dockerBlock, containerCtx())
		if got := render(diags); !diags.HasErrors() || !strings.Contains(got, tt.want) {
			t.Errorf("%q:\n%s\nwant %s", tt.src, got, tt.want)
		}
	}
}

func TestBodyReferences(t *testing.T) {
	b := body(t, containerSrc)
	var got []string
	for _, tr := range BodyReferences(b, dockerBlock) {
		got = append(got, fmt.Sprintf("%s@%d", tr.RootName(), tr.SourceRange().Start.Line))
	}
	sort.Strings(got)
	want := "each@12 each@4 gitkit_checkout@12 gitkit_checkout@4 var@2"
	if strings.Join(got, " ") != want {
		t.Errorf("references %v, want %s", got, want)
	}
	// Without a schema every expression is still found.
	if n := len(BodyReferences(b, nil)); n != 5 {
		t.Errorf("schema-less references: %d, want 5", n)
	}
	if n := len(ExprReferences(nil, expr(t, "var.a + local.b"), nil)); n != 2 {
		t.Errorf("ExprReferences = %d, want 2", n)
	}
}

func TestAttributeRange(t *testing.T) {
	b := body(t, containerSrc+"params = { modeset = \"1\", \"fb-dev\" = \"0\" }\n")
	tests := []struct {
		path cty.Path
		want string // line:col, or "" for nil
	}{
		{cty.GetAttrPath("image"), "2:14"},
		{cty.GetAttrPath("env").Index(cty.StringVal("B")), "4:29"},
		{cty.GetAttrPath("env").GetAttr("A"), "4:20"},
		{cty.GetAttrPath("env").Index(cty.StringVal("Z")), "4:14"}, // the map itself
		{cty.GetAttrPath("entrypoint").Index(cty.NumberIntVal(2)), "3:32"},
		{cty.GetAttrPath("entrypoint").Index(cty.NumberIntVal(9)), "3:14"},
		{cty.GetAttrPath("mount").Index(cty.NumberIntVal(1)).GetAttr("source"), "12:12"},
		{cty.GetAttrPath("mount").Index(cty.NumberIntVal(0)).GetAttr("read_only"), "9:15"},
		{cty.GetAttrPath("mount").Index(cty.NumberIntVal(1)).GetAttr("read_only"), "11:1"}, // not set: the block
		{cty.GetAttrPath("mount").Index(cty.NumberIntVal(1)), "11:1"},
		{cty.GetAttrPath("mount"), "6:1"},
		{cty.GetAttrPath("label").Index(cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal("a")})), "15:1"},
		{cty.GetAttrPath("params").GetAttr("modeset"), "18:22"},
		{cty.GetAttrPath("params").Index(cty.StringVal("fb-dev")), "18:38"},
		{cty.GetAttrPath("nope"), ""},
		{cty.Path{}, ""},
	}
	for _, tt := range tests {
		r := AttributeRange(b, tt.path)
		got := ""
		if r != nil {
			got = fmt.Sprintf("%d:%d", r.Start.Line, r.Start.Column)
			if r.Filename != "b.sf.hcl" {
				t.Errorf("%s: filename %q", pathString(tt.path), r.Filename)
			}
		}
		if got != tt.want {
			t.Errorf("%s: %q, want %q", pathString(tt.path), got, tt.want)
		}
	}
}

func TestDecoderSpec(t *testing.T) {
	schema := hcldec.ImpliedSchema(DecoderSpec(dockerBlock))
	var attrs, blocks []string
	for _, a := range schema.Attributes {
		attrs = append(attrs, fmt.Sprintf("%s:%v", a.Name, a.Required))
	}
	for _, b := range schema.Blocks {
		blocks = append(blocks, b.Type)
	}
	sort.Strings(attrs)
	sort.Strings(blocks)
	// id is computed-only; memory is optional+computed, so settable.
	if got := strings.Join(attrs, " "); got != "bind_files:false cpus:false entrypoint:false env:false image:true memory:false name:true" {
		t.Errorf("attributes: %s", got)
	}
	if got := strings.Join(blocks, " "); got != "healthcheck label mount" {
		t.Errorf("blocks: %s", got)
	}
	if len(hcldec.ImpliedSchema(DecoderSpec(nil)).Attributes) != 0 {
		t.Error("nil block should decode nothing")
	}
}

// TestDynamicBlocks: a dynamic block writes one nested block per element;
// its references are the for_each's and the content's, not the iterator.
func TestDynamicBlocks(t *testing.T) {
	src := `name  = "ds41"
image = "x"
dynamic "mount" {
  for_each = var.mounts
  content {
    source    = "${gitkit_checkout.kit[each.key].path}/${mount.value}"
    target    = "/opt/${mount.key}"
    read_only = true
  }
}
`
	ctx := containerCtx()
	ctx.Variables["var"] = cty.ObjectVal(map[string]cty.Value{"mounts": cty.MapVal(map[string]cty.Value{
		"a": cty.StringVal("serving"), "b": cty.StringVal("aot")})})
	v, diags := DecodeResource(body(t, src), dockerBlock, ctx)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	got, _ := ctyJSON(v.GetAttr("mount"))
	if want := `[{"read_only":true,"source":"/kit/serving","target":"/opt/a"},{"read_only":true,"source":"/kit/aot","target":"/opt/b"}]`; got != want {
		t.Errorf("mounts %s, want %s", got, want)
	}
	var roots []string
	for _, tr := range BodyReferences(body(t, src), dockerBlock) {
		roots = append(roots, tr.RootName())
	}
	sort.Strings(roots)
	if strings.Join(roots, " ") != "each gitkit_checkout var" {
		t.Errorf("references %v", roots)
	}
	for _, tr := range syntaxTraversals(body(t, src), nil) {
		if tr.RootName() == "mount" {
			t.Errorf("the iterator counted as a reference: %v", tr)
		}
	}
}
