package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	schema := flag.String("schema", "", "schema JSON file (default: run `go run ./cmd/sparkform providers schema -json`)")
	out := flag.String("out", filepath.Join("docs", "resources"), "folder the pages are written to")
	check := flag.Bool("check", false, "write nothing; exit 1 and list the pages that are stale")
	flag.Parse()
	if err := run(*schema, *out, *check); err != nil {
		fmt.Fprintln(os.Stderr, "docgen:", err)
		os.Exit(1)
	}
}

func run(schemaFile, out string, check bool) error {
	js, err := loadSchema(schemaFile)
	if err != nil {
		return err
	}
	pages, err := Render(js)
	if err != nil {
		return err
	}
	stale, err := Stale(out, pages)
	if err != nil {
		return err
	}
	if check {
		if len(stale) > 0 {
			return fmt.Errorf("%d generated page(s) in %s are stale: %s; run `make docs` (go run ./internal/docgen) and commit the result",
				len(stale), out, strings.Join(stale, ", "))
		}
		return nil
	}
	return Write(out, pages)
}

// loadSchema reads the schema file, or asks the sparkform of this source
// tree (run from the repository root).
func loadSchema(file string) ([]byte, error) {
	if file != "" {
		return os.ReadFile(file)
	}
	if _, err := os.Stat("go.mod"); err != nil {
		return nil, fmt.Errorf("run from the repository root (no go.mod here), or pass -schema FILE")
	}
	cmd := exec.Command("go", "run", "./cmd/sparkform", "providers", "schema", "-json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	js, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go run ./cmd/sparkform providers schema -json: %v\n%s", err, stderr.String())
	}
	return js, nil
}

// Stale lists the pages in dir that differ from pages, are missing, or
// are generated pages no schema produces any more.
func Stale(dir string, pages map[string][]byte) ([]string, error) {
	var stale []string
	for name, want := range pages {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, want) {
			stale = append(stale, name)
		}
	}
	extra, err := orphans(dir, pages)
	if err != nil {
		return nil, err
	}
	stale = append(stale, extra...)
	sort.Strings(stale)
	return stale, nil
}

// orphans are generated pages (they start with Header) in dir that pages
// does not hold: a resource type that was removed.
func orphans(dir string, pages map[string][]byte) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if _, ok := pages[e.Name()]; ok || !strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err == nil && bytes.HasPrefix(b, []byte(Header)) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Write writes the pages into dir and removes orphaned generated pages.
func Write(dir string, pages map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	extra, err := orphans(dir, pages)
	if err != nil {
		return err
	}
	for _, name := range extra {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	for name, b := range pages {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
