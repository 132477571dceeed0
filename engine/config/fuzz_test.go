package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// FuzzLoadConfig: any bytes as a configuration file load into a module or
// diagnostics, never a panic; every error says what is wrong. The corpus
// is testdata/fuzz/FuzzLoadConfig (the fixtures of testdata/valid and
// testdata/errors). `make fuzz` runs it briefly.
func FuzzLoadConfig(f *testing.F) {
	dir := f.TempDir()
	path := filepath.Join(dir, "main"+FileSuffix)
	f.Fuzz(func(t *testing.T, src []byte) {
		if err := os.WriteFile(path, src, 0o600); err != nil {
			t.Fatal(err)
		}
		m, diags := LoadDir(dir)
		if m == nil {
			t.Fatal("LoadDir returned no module")
		}
		if !diags.HasErrors() {
			diags = m.CheckReferences()
		}
		if !diags.HasErrors() {
			_, diags = ResolveVariables(m, nil, nil)
		}
		for _, d := range diags {
			if d.Severity == hcl.DiagError && d.Summary == "" {
				t.Fatalf("error diagnostic without a summary: %#v", d)
			}
		}
	})
}
