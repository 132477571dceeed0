package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/sparkform/sparkform/state"
)

// TestBackendFromLoadedConfig: once loadConfig has parsed the
// configuration, the state backend comes from that module, not from
// parsing every file a second time (at 10,000 blocks the second parse was
// ~160 MB of garbage). The files are overwritten with text that does not
// parse between the two steps: a second parse would fail.
func TestBackendFromLoadedConfig(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "main.sf.hcl")
	src := `sparkform {
  backend "local" {
    path = "elsewhere.db"
  }
}

node "local" {
  transport = "local"
}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	m := &meta{stdin: os.Stdin, stdout: io.Discard, stderr: io.Discard, chdir: dir}
	if _, ok := m.loadConfig(); !ok {
		t.Fatal("loadConfig failed")
	}
	if err := os.WriteFile(file, []byte("this { is not HCL"), 0o644); err != nil {
		t.Fatal(err)
	}
	be, err := m.backend()
	if err != nil {
		t.Fatalf("backend parsed the configuration again: %v", err)
	}
	local, ok := be.(state.Local)
	if !ok || filepath.Base(local.Path) != "elsewhere.db" {
		t.Fatalf("backend = %#v, want the local file elsewhere.db from the loaded module", be)
	}
}
