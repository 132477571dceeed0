package recipeimport

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"

	"github.com/sparkform/sparkform/engine/config"
	sparkrecipe "github.com/sparkform/sparkform/modules/spark-recipe"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestGolden imports every testdata/*.recipe.toml and compares the root
// module (and the warnings, or the error) with testdata/NAME.golden/.
// Each output is already formatted (fmt -check passes) and loads,
// checks and flattens with the recipe module as a configuration.
func TestGolden(t *testing.T) {
	recipes, _ := filepath.Glob("testdata/*.recipe.toml")
	if len(recipes) < 4 {
		t.Fatalf("only %d recipes in testdata", len(recipes))
	}
	for _, rp := range recipes {
		name := strings.TrimSuffix(filepath.Base(rp), ".recipe.toml")
		t.Run(name, func(t *testing.T) {
			golden(t, rp, filepath.Base(rp), filepath.Join("testdata", name+".golden"), Options{RepoDir: "testdata"})
		})
	}
}

// TestGoldenSparkrun imports every sparkrun recipe (YAML, v1 and v2)
// under testdata/sparkrun/REPO/ (real ones from the public registries,
// testdata/sparkrun/README.md names their sources, and bad ones written
// here), with REPO's folder as the recipe's repository, and compares the
// result with RECIPE.golden/ beside it.
func TestGoldenSparkrun(t *testing.T) {
	var recipes []string
	filepath.WalkDir("testdata/sparkrun", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			recipes = append(recipes, p)
		}
		return nil
	})
	if len(recipes) < 8 {
		t.Fatalf("only %d sparkrun recipes in testdata", len(recipes))
	}
	for _, rp := range recipes {
		rel, _ := filepath.Rel("testdata/sparkrun", rp)
		repo, inRepo, _ := strings.Cut(filepath.ToSlash(rel), "/")
		t.Run(filepath.ToSlash(rel), func(t *testing.T) {
			golden(t, rp, inRepo, strings.TrimSuffix(rp, filepath.Ext(rp))+".golden", Options{RepoDir: filepath.Join("testdata", "sparkrun", repo)})
		})
	}
}

// golden imports the recipe at rp (named name in messages) and compares
// the files, warnings or error with the folder dir.
func golden(t *testing.T, rp, name, dir string, opts Options) {
	src, err := os.ReadFile(rp)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	res, err := ImportWith(src, name, opts)
	if err != nil {
		got["error.txt"] = []byte(err.Error() + "\n")
	} else {
		for n, b := range res.Files {
			got[n] = b
			if f := hclwrite.Format(b); !bytes.Equal(f, b) {
				t.Errorf("%s is not formatted (fmt -check would fail)", n)
			}
		}
		var w strings.Builder
		for _, x := range res.Warnings {
			w.WriteString(x.String() + "\n")
		}
		got["warnings.txt"] = []byte(w.String())
		checkLoads(t, res.Files)
	}
	if *update {
		os.RemoveAll(dir)
		os.MkdirAll(dir, 0o755)
		for n, b := range got {
			if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	want, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(want) != len(got) {
		t.Errorf("golden has %d files, import made %d (run go test -update)", len(want), len(got))
	}
	for n, b := range got {
		w, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Errorf("%s: %v (run go test -update)", n, err)
			continue
		}
		if !bytes.Equal(w, b) {
			t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", n, b, w)
		}
	}
}

// checkLoads writes the root and the module to a folder and loads it as
// sparkform would (structure, references, module flattening).
func checkLoads(t *testing.T, files map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	for n, b := range files {
		os.WriteFile(filepath.Join(dir, n), b, 0o644)
	}
	mdir := filepath.Join(dir, "modules", "spark-recipe")
	os.MkdirAll(mdir, 0o755)
	fs.WalkDir(sparkrecipe.Files, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := fs.ReadFile(sparkrecipe.Files, p)
			os.WriteFile(filepath.Join(mdir, p), b, 0o644)
		}
		return nil
	})
	m, diags := config.LoadDir(dir)
	if !diags.HasErrors() {
		diags = append(diags, m.CheckReferences()...)
	}
	if !diags.HasErrors() {
		_, d := config.Flatten(m, nil)
		diags = append(diags, d...)
	}
	if diags.HasErrors() {
		t.Errorf("the imported root does not load: %s", diagsString(diags))
	}
}

func diagsString(ds hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.Error() + ": " + d.Detail + "\n")
	}
	return b.String()
}

// TestRecognisedByWhatTheyDo: the known steps are found from what they
// do, whatever else is on the line.
func TestRecognisedByWhatTheyDo(t *testing.T) {
	k := parseClone("set -e; git clone -q https://h/r.git /t/src; cd /t/src; git checkout -q aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa; mv /t/src/sub/dir /home/u/kit")
	if k == nil || k.repo != "https://h/r.git" || k.subdir != "sub/dir" || k.dest != "/home/u/kit" {
		t.Errorf("clone: %#v", k)
	}
	if parseClone("git clone https://h/r.git /t/src && mv /t/src /home/u/kit") != nil {
		t.Error("an unpinned clone was taken for a kit")
	}
	g := &gen{mkdirs: map[string]bool{}}
	if !g.recognise("sudo modprobe -r nvidia_drm; sudo modprobe nvidia_drm modeset=1") || g.display.module != "nvidia_drm" || g.display.params["modeset"] != "1" {
		t.Errorf("modprobe: %#v", g.display)
	}
	if g.recognise("modprobe nvidia_drm; rm -rf /") {
		t.Error("a modprobe followed by something else was recognised")
	}
	if mg := parseManifestGen("python3 - models--a--b $(cat /h/models--a--b/refs/dev) /m <<'X'\nHUB = '/h'\nsnapshots\nX"); mg == nil || mg.repos[0].revision != "dev" || mg.repos[0].repoID != "a/b" {
		t.Errorf("manifest generator: %#v", mg)
	}
	if parseManifestGen("python3 - models--a--b $(cat /h/models--OTHER/refs/dev) /m <<'X'\nHUB = '/h'\nsnapshots\nX") != nil {
		t.Error("a ref of another repo was taken for the revision")
	}
}

// TestDrafterIn: a drafter is found by what the speculative-decoding
// flags say, only when they name a hub repository.
func TestDrafterIn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		argv    []string
		id, rev string
		err     bool
	}{
		{"vllm config", []string{"--speculative-config", `{"model": "org/draft", "num_speculative_tokens": 3}`}, "org/draft", "main", false},
		{"vllm config with =", []string{`--speculative-config={"model":"org/draft","revision":"v2"}`}, "org/draft", "v2", false},
		{"vllm underscore", []string{"--speculative_config", `{"model": "org/draft"}`}, "org/draft", "main", false},
		{"old vllm flag", []string{"--speculative-model", "org/d.1"}, "org/d.1", "main", false},
		{"sglang", []string{"--speculative-draft-model-path", "org/eagle", "--speculative-draft-model-revision", "0123456789abcdef0123456789abcdef01234567"}, "org/eagle", "0123456789abcdef0123456789abcdef01234567", false},
		{"a path is not a repo", []string{"--speculative-model", "/opt/draft"}, "", "", false},
		{"a method without a model", []string{"--speculative-config", `{"method": "ngram", "num_speculative_tokens": 4}`}, "", "", false},
		{"mtp", []string{"--speculative-config", `{"method": "mtp"}`}, "", "", false},
		{"no flags", []string{"--port", "8000", "org/model"}, "", "", false},
		{"bad json", []string{"--speculative-config", `{model: x}`}, "", "", true},
		{"bad revision", []string{"--speculative-config", `{"model": "org/d", "revision": "a b"}`}, "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := drafterIn(tc.argv)
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			switch {
			case tc.id == "" && d != nil:
				t.Errorf("found drafter %+v, want none", *d)
			case tc.id != "" && (d == nil || d.repoID != tc.id || d.revision != tc.rev || d.role != "drafter"):
				t.Errorf("drafter = %+v, want %s@%s", d, tc.id, tc.rev)
			}
		})
	}
}
