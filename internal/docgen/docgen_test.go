package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestRenderFixture(t *testing.T) {
	js, err := os.ReadFile("testdata/schema.json")
	if err != nil {
		t.Fatal(err)
	}
	pages, err := Render(js)
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) != 2 {
		t.Fatalf("pages = %d (%v), want demo_thing.md and README.md", len(pages), keys(pages))
	}
	page := string(pages["demo_thing.md"])
	for _, want := range []string{
		Header + "# demo_thing\n",
		"Provider `demo`, schema version 2.",
		"| `name` | `string` | **required**, forces replacement | The name \\| with a pipe. |",
		"| `size` | `number` | optional, computed when unset | Size. |",
		"| `token` | `string` | optional, sensitive | A secret. |",
		"| `any` | `any` | optional | Anything. |",
		"| `files` | `list(object({source = string, target = string}))` | Files. |",
		"| `pair` | `tuple([string, bool])` | A pair. |",
		"## Block `mount`\n\nA set of blocks (order does not matter), any number; a change forces replacement.",
		"## Block `wait`\n\nA single block, optional.",
		"| `http` | `string` | optional | URL. |",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	// Arguments come before read-only attributes, names sorted.
	if a, b := strings.Index(page, "`any`"), strings.Index(page, "`name`"); a < 0 || a > b {
		t.Errorf("arguments not sorted by name:\n%s", page)
	}
	if !strings.HasSuffix(page, "\n") || strings.HasSuffix(page, "\n\n") {
		t.Errorf("page should end with exactly one newline")
	}
	idx := string(pages["README.md"])
	if !strings.Contains(idx, "| [`demo_thing`](demo_thing.md) | `demo` | A thing for the generator's test. |") {
		t.Errorf("index row missing or not the first sentence:\n%s", idx)
	}
	again, _ := Render(js)
	if string(again["demo_thing.md"]) != page {
		t.Error("Render is not deterministic")
	}
}

func TestRenderBadInput(t *testing.T) {
	for name, in := range map[string]string{
		"not json":     "schema",
		"no providers": `{"format_version":"1.0"}`,
		"bad type":     `{"provider_schemas":{"p":{"resource_schemas":{"p_x":{"block":{"attributes":{"a":{"type":"strang","optional":true}}}}}}}}`,
		"bad kind":     `{"provider_schemas":{"p":{"resource_schemas":{"p_x":{"block":{"attributes":{"a":{"type":["bag","string"],"optional":true}}}}}}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Render([]byte(in))
			if !errors.Is(err, ErrSchema) {
				t.Fatalf("err = %v, want ErrSchema", err)
			}
		})
	}
}

// TestStaleAndWrite: Write makes Stale empty, an edit or a leftover
// generated page makes it list them, and a hand-written page is left alone.
func TestStaleAndWrite(t *testing.T) {
	js, _ := os.ReadFile("testdata/schema.json")
	pages, err := Render(js)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "old_type.md"), []byte(Header+"# old_type\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.md"), []byte("# hand-written\n"), 0o644)
	if s, _ := Stale(dir, pages); strings.Join(s, ",") != "README.md,demo_thing.md,old_type.md" {
		t.Errorf("stale before Write = %v", s)
	}
	if err := Write(dir, pages); err != nil {
		t.Fatal(err)
	}
	if s, _ := Stale(dir, pages); len(s) != 0 {
		t.Errorf("stale after Write = %v", s)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.md")); err != nil {
		t.Errorf("hand-written page removed: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "demo_thing.md"), []byte("edited\n"), 0o644)
	if s, _ := Stale(dir, pages); strings.Join(s, ",") != "demo_thing.md" {
		t.Errorf("stale after an edit = %v", s)
	}
}

// TestCommittedPagesAreFresh fails when docs/resources does not match what
// the current provider schemas generate: run `make docs`.
func TestCommittedPagesAreFresh(t *testing.T) {
	cmd := exec.Command("go", "run", "./cmd/sparkform", "providers", "schema", "-json")
	cmd.Dir = filepath.Join("..", "..")
	js, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("sparkform providers schema -json: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	pages, err := Render(js)
	if err != nil {
		t.Fatal(err)
	}
	stale, err := Stale(filepath.Join("..", "..", "docs", "resources"), pages)
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) > 0 {
		t.Fatalf("docs/resources is stale (%s): run `make docs` (go run ./internal/docgen) and commit the pages", strings.Join(stale, ", "))
	}
}

func keys(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
