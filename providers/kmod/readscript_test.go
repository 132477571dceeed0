package kmod_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sparkform/sparkform/providers/kmod"
)

// The read script reads a module's files with the shell alone (no process
// per parameter: it runs on every plan) and prints what `cat` gave: an
// empty file as an empty value, a value without a newline, trailing
// spaces kept, folders and missing modules skipped. PATH is empty, so a
// script that still ran cat would lose the values.
func TestReadScriptNeedsNoTools(t *testing.T) {
	d := t.TempDir()
	files := map[string]string{
		"mod/initstate":          "live\n",
		"mod/refcnt":             "3\n",
		"mod/holders/h1":         "",
		"mod/parameters/modeset": "Y\n",
		"mod/parameters/empty":   "",
		"mod/parameters/nonl":    "nonl",
		"mod/parameters/spaces":  "a b  \n",
	}
	for name, data := range files {
		p := filepath.Join(d, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range []string{"mod/parameters/adir", "other"} {
		if err := os.MkdirAll(filepath.Join(d, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sh, "-c", kmod.ReadScript, "sh", d, "mod", "missing", "other")
	cmd.Env = []string{"PATH=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := "M mod\nL\nS live\nR 3\nH h1\nP empty=\nP modeset=Y\nP nonl=nonl\nP spaces=a b  \nM missing\nM other\nL\n"
	if string(out) != want {
		t.Errorf("read script printed\n%q\nwant\n%q", out, want)
	}
}
