package docker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/internal/ctyval"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  bool
	}{
		{"9g", 9 << 30, false},
		{"9G", 9 << 30, false},
		{"9gb", 9 << 30, false},
		{"9GiB", 9 << 30, false},
		{"512m", 512 << 20, false},
		{"2g", 2 << 30, false},
		{"1.5g", 3 << 29, false},
		{"9663676416", 9663676416, false},
		{"64k", 64 << 10, false},
		{"", 0, true},
		{"9x", 0, true},
		{"-1g", 0, true},
		{"g", 0, true},
	} {
		got, err := parseSize(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d, err=%v", tc.in, got, err, tc.want, tc.err)
		}
		if err != nil && !errors.Is(err, ErrBadSize) {
			t.Errorf("parseSize(%q) error %v is not ErrBadSize", tc.in, err)
		}
	}
}

func TestFormatSizeRoundTrips(t *testing.T) {
	for _, n := range []int64{9 << 30, 512 << 20, 2 << 30, 1 << 40, 1536, 1000, 64 << 20} {
		s := formatSize(n)
		back, err := parseSize(s)
		if err != nil || back != n {
			t.Errorf("formatSize(%d) = %q, which parses to %d, %v", n, s, back, err)
		}
	}
	if got := formatSize(9663676416); got != "9g" {
		t.Errorf("formatSize(9 GiB) = %q, want 9g", got)
	}
}

func TestEquiv(t *testing.T) {
	s := cty.StringVal
	l := func(ss ...string) cty.Value { return ctyval.ListOrNull(ss) }
	for _, tc := range []struct {
		attr string
		a, b cty.Value
		want bool
	}{
		{"memory", s("9g"), s("9216m"), true},
		{"memory", s("9g"), s("9663676416"), true},
		{"memory", s("9g"), s("10g"), false},
		{"memory_swap", s("-1"), s("-1"), true},
		{"memory_swap", s("-1"), s("9g"), false},
		{"cpus", cty.NumberIntVal(6), cty.NumberFloatVal(6.0000000001), true},
		{"cpus", cty.NumberIntVal(6), cty.NumberIntVal(5), false},
		{"restart", cty.NullVal(cty.String), s("no"), true},
		{"restart", s("on-failure"), s("on-failure:0"), true},
		{"restart", s("always"), s("no"), false},
		{"image", s("busybox"), s("docker.io/library/busybox:latest"), true},
		{"image", s("busybox:1"), s("busybox:2"), false},
		{"devices", l("/dev/dri/card0"), l("/dev/dri/card0:/dev/dri/card0:rwm"), true},
		{"devices", l("/dev/a", "/dev/b"), l("/dev/b:/dev/b:rwm", "/dev/a"), true},
		{"devices", l("/dev/a:/dev/a:r"), l("/dev/a"), false},
		{"cap_add", ctyval.SetOrNull([]string{"sys_nice"}), ctyval.SetOrNull([]string{"CAP_SYS_NICE"}), true},
		{"ulimits", ctyval.MapOrNull(map[string]string{"memlock": "-1"}), ctyval.MapOrNull(map[string]string{"memlock": "-1:-1"}), true},
		{"env", cty.NullVal(cty.Map(cty.String)), cty.MapValEmpty(cty.String), true},
		{"env", ctyval.MapOrNull(map[string]string{"A": "1"}), ctyval.MapOrNull(map[string]string{"A": "2"}), false},
		{"memory", cty.UnknownVal(cty.String), s("9g"), false},
	} {
		if got := equiv(tc.attr, tc.a, tc.b); got != tc.want {
			t.Errorf("equiv(%s, %#v, %#v) = %v, want %v", tc.attr, tc.a, tc.b, got, tc.want)
		}
	}
}

func TestParseCgroups(t *testing.T) {
	out := "10\tv1\t9663676416\t9663676416\t600000\t100000\n" +
		"11\tv1\t9223372036854771712\t9223372036854771712\t-1\t100000\n" +
		"12\tv2\t9663676416\t0\t600000 100000\n" +
		"13\tnone\n"
	got := parseCgroups([]byte(out))
	want := map[int]cgroupValues{
		10: {1, "9663676416", "0", "600000 100000"},
		11: {1, "max", "max", "max 100000"},
		12: {2, "9663676416", "0", "600000 100000"},
	}
	if len(got) != len(want) {
		t.Fatalf("parseCgroups: %v, want %v", got, want)
	}
	for pid, w := range want {
		if got[pid] != w {
			t.Errorf("pid %d: %+v, want %+v", pid, got[pid], w)
		}
	}
}

// validateCases: each config (attrs over a valid base) and the attribute
// path and words the error must carry.
func TestValidateContainer(t *testing.T) {
	p := New()
	rs := sdktest.Schema(t, p, "docker_container")
	base := map[string]cty.Value{"name": cty.StringVal("c"), "image": cty.StringVal("busybox")}
	files := func(n int) cty.Value {
		vs := make([]cty.Value, n)
		for i := range vs {
			vs[i] = cty.ObjectVal(map[string]cty.Value{"source": cty.StringVal(fmt.Sprintf("/blobs/%d", i)), "target": cty.StringVal(fmt.Sprintf("/model/%d", i))})
		}
		return cty.ListVal(vs)
	}
	for _, tc := range []struct {
		name  string
		attrs map[string]cty.Value
		path  string
		words string
	}{
		{"ok", nil, "", ""},
		{"unknown values pass", map[string]cty.Value{"memory": cty.UnknownVal(cty.String), "bind_files": cty.UnknownVal(cty.List(bindFileType))}, "", ""},
		{"bad size", map[string]cty.Value{"memory": cty.StringVal("9 gigs")}, "memory", "9g"},
		{"swap below memory", map[string]cty.Value{"memory": cty.StringVal("9g"), "memory_swap": cty.StringVal("8g")}, "memory_swap", "no swap"},
		{"bad name", map[string]cty.Value{"name": cty.StringVal("-x y")}, "name", "letters"},
		{"bad device", map[string]cty.Value{"devices": ctyval.ListOrNull([]string{"dri/card0"})}, "devices", "absolute"},
		{"bad perms", map[string]cty.Value{"devices": ctyval.ListOrNull([]string{"/dev/a:/dev/a:rx"})}, "devices", "rwm"},
		{"bad gpus", map[string]cty.Value{"gpus": cty.StringVal("some")}, "gpus", "all"},
		{"bad restart", map[string]cty.Value{"restart": cty.StringVal("sometimes")}, "restart", "on-failure"},
		{"bad ulimit", map[string]cty.Value{"ulimits": ctyval.MapOrNull(map[string]string{"nofile": "lots"})}, "ulimits", "SOFT:HARD"},
		{"cgroup mount path", map[string]cty.Value{"cgroup_parent": cty.StringVal("/sys/fs/cgroup/sparkform")}, "cgroup_parent", "/sparkform"},
		{"reserved label", map[string]cty.Value{"labels": ctyval.MapOrNull(map[string]string{labelAddress: "x"})}, "labels", "sparkform itself"},
		{"too many binds", map[string]cty.Value{"bind_files": files(MaxBinds + 1)}, "bind_files", "mount-max"},
		{"relative bind", map[string]cty.Value{"bind_files": cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{"source": cty.StringVal("blobs/x"), "target": cty.StringVal("/m/x")})})}, "bind_files", "absolute"},
		{"escaping mount target", map[string]cty.Value{"mount": mountList("/srv/x", "/m/../../proc/x")}, "mount", `"/proc/x"`},
		{"dot mount target", map[string]cty.Value{"mount": mountList("/srv/x", "/m/./x")}, "mount", `"." step`},
		{"root mount target", map[string]cty.Value{"mount": mountList("/srv/x", "//")}, "mount", "container's root"},
		{"escaping bind target", map[string]cty.Value{"bind_files": cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{"source": cty.StringVal("/blobs/x"), "target": cty.StringVal("/model/../etc/passwd")})})}, "bind_files", `"/etc/passwd"`},
		{"NUL in command", map[string]cty.Value{"command": ctyval.ListOrNull([]string{"serve", "--x\x00--y"})}, "command", "NUL byte"},
		{"NUL in entrypoint", map[string]cty.Value{"entrypoint": ctyval.ListOrNull([]string{"/bin/sh\x00"})}, "entrypoint", "NUL byte"},
		{"NUL in env value", map[string]cty.Value{"env": ctyval.MapOrNull(map[string]string{"A": "x\x00y"})}, "env", "NUL byte"},
		{"NUL in working_dir", map[string]cty.Value{"working_dir": cty.StringVal("/w\x00")}, "working_dir", "NUL byte"},
		{"wait two kinds", map[string]cty.Value{"wait": cty.ObjectVal(map[string]cty.Value{"http": cty.StringVal("http://127.0.0.1:1/"), "tcp": cty.StringVal("127.0.0.1:1"), "log_line": cty.NullVal(cty.String), "timeout": cty.NullVal(cty.String)})}, "wait", "exactly one"},
		{"wait bad regexp", map[string]cty.Value{"wait": cty.ObjectVal(map[string]cty.Value{"http": cty.NullVal(cty.String), "tcp": cty.NullVal(cty.String), "log_line": cty.StringVal("("), "timeout": cty.StringVal("1m")})}, "wait", "regexp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attrs := map[string]cty.Value{}
			for k, v := range base {
				attrs[k] = v
			}
			for k, v := range tc.attrs {
				attrs[k] = v
			}
			diags := p.ValidateResourceConfig(context.Background(), sdk.ValidateRequest{TypeName: "docker_container", Config: sdktest.Object(t, rs.Block, attrs)})
			if tc.path == "" {
				if diags.HasErrors() {
					t.Fatalf("unexpected errors: %v", diags.Err())
				}
				return
			}
			if !diags.HasErrors() {
				t.Fatalf("no error; want one about %s", tc.path)
			}
			d := diags[0]
			if len(d.Path) == 0 || d.Path[0].(cty.GetAttrStep).Name != tc.path {
				t.Errorf("error path %#v, want %s", d.Path, tc.path)
			}
			if msg := d.Summary + ": " + d.Detail; !strings.Contains(msg, tc.words) {
				t.Errorf("error %q does not say %q", msg, tc.words)
			}
		})
	}
}

func TestValidateImage(t *testing.T) {
	p := New()
	rs := sdktest.Schema(t, p, "docker_image")
	for _, tc := range []struct {
		attrs map[string]cty.Value
		bad   string
	}{
		{map[string]cty.Value{"name": cty.StringVal("127.0.0.1:5000/x:1")}, ""},
		{map[string]cty.Value{"name": cty.StringVal("x"), "pull": cty.StringVal("sometimes")}, "pull"},
		{map[string]cty.Value{"name": cty.StringVal("repo/Has Spaces")}, "name"},
	} {
		diags := p.ValidateResourceConfig(context.Background(), sdk.ValidateRequest{TypeName: "docker_image", Config: sdktest.Object(t, rs.Block, tc.attrs)})
		if (tc.bad != "") != diags.HasErrors() {
			t.Errorf("%v: diags %v, want error on %q", tc.attrs, diags, tc.bad)
		}
	}
}

// mountList is a mount block set with one bind.
func mountList(source, target string) cty.Value {
	return cty.SetVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{
		"source": cty.StringVal(source), "target": cty.StringVal(target),
		"read_only": cty.NullVal(cty.Bool), "create_host_path": cty.NullVal(cty.Bool),
	})})
}

// TestOrderLike: observed bind files come back in the order config gave
// them; ones config does not name go last, in the order observed.
func TestOrderLike(t *testing.T) {
	bf := func(target string) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{"source": cty.StringVal("/src" + target), "target": cty.StringVal(target)})
	}
	targets := func(vs []cty.Value) []string {
		var out []string
		for _, v := range vs {
			out = append(out, v.GetAttr("target").AsString())
		}
		return out
	}
	want := []cty.Value{bf("/a"), bf("/b"), bf("/c"), bf("/d")}
	got := []cty.Value{bf("/x"), bf("/d"), bf("/b"), bf("/y"), bf("/a"), bf("/c")}
	if g, w := targets(orderLike(got, want)), []string{"/a", "/b", "/c", "/d", "/x", "/y"}; !slices.Equal(g, w) {
		t.Errorf("orderLike = %v, want %v", g, w)
	}
	if g := orderLike(nil, want); len(g) != 0 {
		t.Errorf("orderLike(nil) = %v", g)
	}
}
