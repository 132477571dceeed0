package recipeimport

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestShellSplit: a recipe's command splits as sh would split it, and
// what only a shell could run is refused.
func TestShellSplit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  string
	}{
		{"vllm serve m --port 8000", []string{"vllm", "serve", "m", "--port", "8000"}, ""},
		{"vllm serve m \\\n    --x 1\n", []string{"vllm", "serve", "m", "--x", "1"}, ""},
		{"a \\  \n b", []string{"a", "b"}, ""}, // the trailing-space slip sparkrun repairs
		{`a '{"k": "v w"}' "x y" z\ z`, []string{"a", `{"k": "v w"}`, "x y", "z z"}, ""},
		{`a "q\"uote"`, []string{"a", `q"uote`}, ""},
		{"a ''", []string{"a", ""}, ""},
		{"a; rm -rf /", nil, "uses the shell"},
		{"a && b", nil, "uses the shell"},
		{"a $HOME", nil, "uses the shell"},
		{`a "$HOME"`, nil, "inside double quotes"},
		{"a `id`", nil, "uses the shell"},
		{"a 'open", nil, "unclosed single quote"},
		{`a "open`, nil, "unclosed double quote"},
		{"a # note", nil, "comment"},
	} {
		got, err := shellSplit(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestDropFlags: the recipe's own layout flags give way to the module's,
// in every spelling.
func TestDropFlags(t *testing.T) {
	got := dropFlags([]string{"m", "-tp", "2", "--tensor-parallel-size=2", "--pipeline_parallel_size", "1", "--port", "9", "--host", "0.0.0.0", "--distributed-executor-backend", "ray", "--x"}, layoutFlags)
	if want := []string{"m", "--host", "0.0.0.0", "--x"}; !reflect.DeepEqual(got, want) {
		t.Errorf("dropFlags = %q, want %q", got, want)
	}
}

// TestImageRefs: what counts as unpinned, and which of a node's digests
// is the image's.
func TestImageRefs(t *testing.T) {
	for _, tc := range []struct {
		ref      string
		unpinned bool
	}{
		{"vllm-node", true},
		{"ghcr.io/a/b:latest", true},
		{"localhost:5000/a/b", true},
		{"localhost:5000/a/b:1.2", false},
		{"scitrera/dgx-spark-vllm:0.16.0-t5", false},
		{"a/b@sha256:0123", false},
		{"a/b:latest@sha256:0123", false},
	} {
		if got := unpinned(tc.ref); got != tc.unpinned {
			t.Errorf("unpinned(%q) = %v", tc.ref, got)
		}
	}
	for _, tc := range []struct {
		ref     string
		digests []string
		want    string
	}{
		{"busybox", []string{"busybox@sha256:aa"}, "busybox@sha256:aa"},
		{"docker.io/library/busybox:latest", []string{"busybox@sha256:aa"}, "busybox@sha256:aa"},
		{"ghcr.io/a/b", []string{"other/b@sha256:bb", "ghcr.io/a/b@sha256:cc"}, "ghcr.io/a/b@sha256:cc"},
		{"127.0.0.1:5000/x", []string{"127.0.0.1:5000/x@sha256:dd"}, "127.0.0.1:5000/x@sha256:dd"},
		{"ghcr.io/a/b", []string{"ghcr.io/a/c@sha256:cc"}, ""},
		{"ghcr.io/a/b", nil, ""},
	} {
		if got := pickDigest(tc.ref, tc.digests); got != tc.want {
			t.Errorf("pickDigest(%q, %q) = %q, want %q", tc.ref, tc.digests, got, tc.want)
		}
	}
}

// TestPinWarnings: how a node's answer changes the image and the
// warnings; a failing node is an error, not a silent unpinned import.
func TestPinWarnings(t *testing.T) {
	recipe := []byte("model: org/m\nruntime: vllm\ncontainer: ghcr.io/a/b:latest\ndefaults:\n  port: 8000\ncommand: vllm serve {model} --port {port}\n")
	for _, tc := range []struct {
		name    string
		answer  func(string) ([]string, error)
		image   string
		warning string
		err     string
	}{
		{"pinned", func(string) ([]string, error) { return []string{"ghcr.io/a/b@sha256:ab"}, nil }, "ghcr.io/a/b@sha256:ab", "", ""},
		{"absent", func(string) ([]string, error) { return nil, ErrNoImage }, "ghcr.io/a/b:latest", "n1 does not have ghcr.io/a/b:latest", ""},
		{"built", func(string) ([]string, error) { return nil, nil }, "ghcr.io/a/b:latest", "no registry digest", ""},
		{"unreachable", func(string) ([]string, error) { return nil, errors.New("connection refused") }, "", "", "asking n1 for the digest of ghcr.io/a/b:latest: connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := ImportWith(recipe, "r.yaml", Options{RepoDigests: tc.answer, PinFrom: "n1"})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !imageLine(string(res.Files["main.sf.hcl"]), tc.image) {
				t.Errorf("image is not %s:\n%s", tc.image, res.Files["main.sf.hcl"])
			}
			var ws []string
			for _, w := range res.Warnings {
				ws = append(ws, w.Message)
			}
			all := strings.Join(ws, "\n")
			if tc.warning == "" && strings.Contains(all, "unpinned") || tc.warning != "" && (!strings.Contains(all, tc.warning) || !strings.Contains(all, "cannot see that drift")) {
				t.Errorf("warnings %q, want %q", all, tc.warning)
			}
		})
	}
}

func imageLine(main, image string) bool {
	for _, l := range strings.Split(main, "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "image" && f[2] == `"`+image+`"` {
			return true
		}
	}
	return false
}

// TestInlinedStepRuns: a { script = PATH } step of the recipe's
// repository runs as written (its ${...} untouched by HCL) and records
// its hash: check fails before it ran, passes after, fails again for a
// changed script; destroy removes the record. The marker folder is moved
// to a temporary one for the test.
func TestInlinedStepRuns(t *testing.T) {
	repo := t.TempDir()
	out := filepath.Join(t.TempDir(), "out")
	os.MkdirAll(filepath.Join(repo, "scripts"), 0o755)
	os.WriteFile(filepath.Join(repo, "scripts", "prep.sh"), []byte("x=ran\necho \"${x}\" > "+out+"\n"), 0o755)
	recipe := []byte("docker_image = \"img:1\"\nrequired_nodes = 1\ntensor_parallel_size = 1\nbefore_serve = [{ script = \"scripts/prep.sh\" }]\n")
	res, err := ImportWith(recipe, "inl.recipe.toml", Options{RepoDir: repo})
	if err != nil {
		t.Fatal(err)
	}
	cmd := nodeCommand(t, res.Files["main.sf.hcl"], "before_serve_1")
	steps := t.TempDir()
	move := func(s string) string { return strings.ReplaceAll(s, "/var/lib/sparkform/steps", steps) }
	sh := func(script string) error { return exec.Command("/bin/sh", "-c", move(script)).Run() }
	if sh(cmd["check_script"][0]) == nil {
		t.Fatal("check passed before the step ran")
	}
	if err := sh(cmd["create_script"][0]); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); string(b) != "ran\n" {
		t.Errorf("the script wrote %q", b)
	}
	if err := sh(cmd["check_script"][0]); err != nil {
		t.Errorf("check failed after the step ran: %v", err)
	}
	// A changed script is another hash: the old record does not pass it.
	os.WriteFile(filepath.Join(repo, "scripts", "prep.sh"), []byte("echo changed\n"), 0o755)
	res2, err := ImportWith(recipe, "inl.recipe.toml", Options{RepoDir: repo})
	if err != nil {
		t.Fatal(err)
	}
	if sh(nodeCommand(t, res2.Files["main.sf.hcl"], "before_serve_1")["check_script"][0]) == nil {
		t.Error("a changed script's check passed on the old record")
	}
	d := cmd["destroy"]
	if err := exec.Command(d[0], append(d[1:len(d)-1], move(d[len(d)-1]))...).Run(); err != nil {
		t.Fatal(err)
	}
	if sh(cmd["check_script"][0]) == nil {
		t.Error("check passed after destroy")
	}
}

// TestEnvExpr: env values naming shell variables become references to
// sensitive root variables, the text around them escaped for HCL.
func TestEnvExpr(t *testing.T) {
	for in, want := range map[string]string{
		"${HF_TOKEN}":        "var.env_hf_token",
		"$HF_TOKEN":          "var.env_hf_token",
		"Bearer ${API_KEY}":  `"Bearer ${var.env_api_key}"`,
		`"q" \ %{x} $A-$B`:   `"\"q\" \\ %%{x} ${var.env_a}-${var.env_b}"`,
		"${A}${B}":           `"${var.env_a}${var.env_b}"`,
		"pre ${Lower_case}x": `"pre ${var.env_lower_case}x"`,
	} {
		if got := envExpr(in); got != want {
			t.Errorf("envExpr(%q) = %s, want %s", in, got, want)
		}
	}
	if got := shellNames("$A ${B} $5 $"); !reflect.DeepEqual(got, []string{"A", "B"}) {
		t.Errorf("shellNames = %q", got)
	}
}
