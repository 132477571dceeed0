package gitkit_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/providers/gitkit"
	"github.com/sparkform/sparkform/providers/sdk"
)

// hostileNames are folder names that would run MARK's touch, split into
// several words or lines, or be read as an option or a glob, were they
// spliced into a shell line or left unquoted in a script. `\n` is a
// literal backslash-n: dash's echo would print a newline for it.
var hostileNames = []string{
	"two words", "it's", `say "hi"`, "$(touch MARK)", "`touch MARK`", "x;touch MARK",
	"-rf", "--", "*", "[a-z]?", `back\nslash`, "${HOME}", "a|b&c>d",
}

// TestHostileValuesRunNothing creates and destroys a checkout whose repo
// folder, path and subdir carry hostile names, on every test node: each
// must be used byte for byte and none may run a command (the marker file
// must not appear).
func TestHostileValuesRunNothing(t *testing.T) {
	for _, n := range testNodes(t) {
		t.Run(n.name, func(t *testing.T) {
			mark := filepath.Join(n.dir, "pwned")
			sub := func(s string) string { return strings.ReplaceAll(s, "MARK", mark) }
			p := gitkit.New()
			for i, h := range hostileNames {
				h := sub(h)
				// The repo itself lives under a hostile folder name.
				base := t.TempDir()
				repoDir := filepath.Join(base, strings.ReplaceAll(h, "/", "_"))
				if err := os.Mkdir(repoDir, 0o755); err != nil {
					t.Fatal(err)
				}
				// The node's user must reach it (newFixture opens the two
				// folders above the repo; the test's own is one more up).
				if err := os.Chmod(filepath.Dir(base), 0o755); err != nil {
					t.Fatal(err)
				}
				fx := newFixture(t, repoDir)
				path := filepath.Join(n.dir, "kits", h, "kit "+h)
				subdir := "release/runtime"
				in := newInstance(t, p, n.node, "gitkit_checkout.h")
				cfg := config(fx.url, fx.c1, subdir, path)
				if d := p.ValidateResourceConfig(context.Background(), sdk.ValidateRequest{TypeName: gitkit.TypeCheckout, Config: cfg}); d.HasErrors() {
					t.Fatalf("case %d %q: validate: %v", i, h, d.Err())
				}
				events := in.converge(cfg)
				if !slices.Contains(events, "cloning "+fx.url) {
					t.Errorf("case %d %q: progress should name the repo exactly once on one line, got %q", i, h, events)
				}
				if got := n.read(t, filepath.Join(path, "serving/conservative.yaml")); got != "max_num_seqs: 2\n" {
					t.Errorf("case %d %q: checkout content %q", i, h, got)
				}
				if n.exists(mark) {
					t.Fatalf("case %d %q: an injected command ran (%s exists)", i, h, mark)
				}
				pr := in.plan(nullObj())
				if resp, _ := in.apply(nullObj(), pr); resp.Diagnostics.HasErrors() {
					t.Fatalf("case %d %q: destroy: %v", i, h, resp.Diagnostics.Err())
				}
				if n.exists(path) || n.exists(filepath.Dir(path)) {
					t.Errorf("case %d %q: destroy left %s or the folder it made", i, h, path)
				}
				if n.exists(mark) {
					t.Fatalf("case %d %q: an injected command ran on destroy", i, h)
				}
			}
			// git's ext:: transport would run a command; it stays refused
			// (git's default protocol.allow) and the error says the repo
			// cannot be fetched.
			in := newInstance(t, p, n.node, "gitkit_checkout.ext")
			cfg := config("ext::sh -c touch% "+mark, strings.Repeat("a", 40), "", filepath.Join(n.dir, "ext"))
			pr := in.plan(cfg)
			if pr.Diagnostics.HasErrors() {
				t.Fatalf("plan: %v", pr.Diagnostics.Err())
			}
			resp, _ := in.apply(cfg, pr)
			if err := resp.Diagnostics.Err(); err == nil || !strings.Contains(err.Error(), "cannot fetch repo") {
				t.Errorf("ext:: repo: want a 'cannot fetch repo' error, got %v", err)
			}
			if n.exists(mark) {
				t.Fatalf("ext:: repo ran its command (%s exists)", mark)
			}
		})
	}
}

// TestHostileValuesRefused: values that could reach git or the shell as
// options, split lines, or leave their folder are refused by Validate with
// a message naming the problem.
func TestHostileValuesRefused(t *testing.T) {
	const commit = "878e0eecd893fadc69ad2d58b2df0fabb0fae2ee"
	cases := []struct {
		name                 string
		repo, commit, subdir string
		path, want           string
	}{
		{"repo as option", "--upload-pack=touch /tmp/pwned-gitkit", commit, "", "/srv/kit", "would be read as a git option"},
		{"repo as short option", "-u touch /tmp/pwned-gitkit", commit, "", "/srv/kit", "would be read as a git option"},
		{"repo with newline", "/srv/repo\ntouch /tmp/pwned-gitkit", commit, "", "/srv/kit", "control character"},
		{"commit substitution", "/srv/repo", "$(touch /tmp/pwned-gitkit)", "", "/srv/kit", "40-character lowercase hex"},
		{"commit as option", "/srv/repo", "--orphan=x", "", "/srv/kit", "40-character lowercase hex"},
		{"subdir leaves repo", "/srv/repo", commit, "../../etc", "/srv/kit", "leaves the repository"},
		{"subdir absolute", "/srv/repo", commit, "/etc", "/srv/kit", "relative to the repository root"},
		{"subdir newline", "/srv/repo", commit, "a\nb", "/srv/kit", "control character"},
		{"relative path", "/srv/repo", commit, "", "-rf", "must be absolute"},
		{"path with newline", "/srv/repo", commit, "", "/srv/kit\n$(touch /tmp/pwned-gitkit)", "control character"},
		{"path unclean", "/srv/repo", commit, "", "/srv/../etc", "not a clean path"},
	}
	p := gitkit.New()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := p.ValidateResourceConfig(context.Background(), sdk.ValidateRequest{TypeName: gitkit.TypeCheckout, Config: config(tc.repo, tc.commit, tc.subdir, tc.path)})
			if err := d.Err(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error saying %q, got %v", tc.want, err)
			}
		})
	}
	// Import ids are checked the same way.
	resp := p.ImportResource(context.Background(), sdk.ImportRequest{
		TypeName: gitkit.TypeCheckout, ID: "/srv/kit,--upload-pack=touch /tmp/pwned-gitkit," + commit,
		Node: sdk.Node{Name: "n", Transport: "local"},
	})
	if err := resp.Diagnostics.Err(); err == nil || !strings.Contains(err.Error(), "git option") {
		t.Errorf("import with an option as repo: want a 'git option' error, got %v", err)
	}
}
