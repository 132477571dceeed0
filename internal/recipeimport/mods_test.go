package recipeimport

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/internal/realpart"
)

// TestModImageBuilds runs what the import generates for a recipe's mods
// against the real Docker Engine: the create_script (as node_command runs
// it, /bin/sh -c) builds the derived image in which run.sh ran in its
// folder, with the mod's other files (a text patch and a binary file
// beside it, the binary one inlined as base64) byte for byte; check
// passes then, and fails after destroy, which removes only that image
// (and succeeds when the image is already gone).
func TestModImageBuilds(t *testing.T) {
	docker, err := exec.LookPath("docker")
	realpart.Need(t, "the docker CLI", err)
	bb, err := os.ReadFile("/bin/busybox")
	realpart.Need(t, "busybox-static at /bin/busybox", err)
	run := func(argv ...string) (string, error) {
		out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		return string(out), err
	}
	must := func(argv ...string) string {
		t.Helper()
		out, err := run(argv...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", argv, err, out)
		}
		return out
	}
	// The base: busybox-static with its applets, so RUN has a shell.
	base := "sparkform-modtest-base:1"
	bctx := t.TempDir()
	os.WriteFile(filepath.Join(bctx, "busybox"), bb, 0o755)
	os.WriteFile(filepath.Join(bctx, "Dockerfile"), []byte("FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\nWORKDIR /srv\n"), 0o644)
	must(docker, "build", "-q", "-t", base, bctx)
	t.Cleanup(func() { run(docker, "image", "rm", "-f", base) })

	repo := t.TempDir()
	mod := filepath.Join(repo, "mods", "fix-it")
	os.MkdirAll(filepath.Join(mod, "sub"), 0o755)
	binary := []byte{0, 1, 2, 0xff, 'S', 'P', 'A', 'R', 'K', 0}
	os.WriteFile(filepath.Join(mod, "run.sh"), []byte("#!/bin/sh\nset -e\n# ${NOT_HCL} stays as written\ncat fix.patch > /patched\ncp sub/blob.bin /blob.bin\necho \"$WORKSPACE_DIR\" > /workspace-dir\n"), 0o644)
	os.WriteFile(filepath.Join(mod, "fix.patch"), []byte("--- a\n+++ b\n"), 0o644)
	os.WriteFile(filepath.Join(mod, "sub", "blob.bin"), binary, 0o644)
	recipe := []byte("model: org/m\nruntime: vllm\ncontainer: " + base + "\nmods: [mods/fix-it]\ndefaults:\n  port: 8000\ncommand: vllm serve {model} --port {port}\n")
	res, err := ImportWith(recipe, "modtest.yaml", Options{RepoDir: repo})
	if err != nil {
		t.Fatal(err)
	}
	cmd := nodeCommand(t, res.Files["main.sf.hcl"], "mods")
	tag := cmd["check"][len(cmd["check"])-1]
	t.Cleanup(func() { run(docker, "image", "rm", "-f", tag) })

	if _, err := run(cmd["check"]...); err == nil {
		t.Fatalf("check passed before create: %v", cmd["check"])
	}
	must("/bin/sh", "-c", cmd["create_script"][0])
	if out, err := run(cmd["check"]...); err != nil {
		t.Fatalf("check failed after create: %v\n%s", err, out)
	}
	if got := must(docker, "run", "--rm", "--entrypoint", "/bin/cat", tag, "/patched"); got != "--- a\n+++ b\n" {
		t.Errorf("the mod's patch in the image: %q", got)
	}
	if got := must(docker, "run", "--rm", "--entrypoint", "/bin/cat", tag, "/blob.bin"); got != string(binary) {
		t.Errorf("the binary file: %q, want %q", got, binary)
	}
	if got := must(docker, "run", "--rm", "--entrypoint", "/bin/cat", tag, "/workspace-dir"); got != "/srv\n" {
		t.Errorf("WORKSPACE_DIR = %q, want the image's working folder /srv", got)
	}
	must("/bin/sh", "-c", cmd["destroy_script"][0])
	if _, err := run(cmd["check"]...); err == nil {
		t.Error("check passed after destroy")
	}
	if out, err := run("/bin/sh", "-c", cmd["destroy_script"][0]); err != nil {
		t.Errorf("destroy of an image already gone failed: %v\n%s", err, out)
	}
	if _, err := run(docker, "image", "inspect", base); err != nil {
		t.Error("destroy removed the base image")
	}
}

// nodeCommand evaluates node_command.NAME's literal arguments in a
// generated file: argv lists, and scripts as one-element lists.
func nodeCommand(t *testing.T, src []byte, name string) map[string][]string {
	t.Helper()
	f, diags := hclsyntax.ParseConfig(src, "main.sf.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	for _, b := range f.Body.(*hclsyntax.Body).Blocks {
		if b.Type != "resource" || len(b.Labels) != 2 || b.Labels[0] != "node_command" || b.Labels[1] != name {
			continue
		}
		out := map[string][]string{}
		for k, a := range b.Body.Attributes {
			v, d := a.Expr.Value(nil)
			if d.HasErrors() {
				continue // references (node, for_each)
			}
			switch {
			case v.Type() == cty.String:
				out[k] = []string{v.AsString()}
			case v.Type().IsTupleType() || v.Type().IsListType():
				for _, e := range v.AsValueSlice() {
					out[k] = append(out[k], e.AsString())
				}
			}
		}
		return out
	}
	t.Fatalf("no node_command.%s in:\n%s", name, src)
	return nil
}
