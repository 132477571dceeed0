package hubstage

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostilePathsRunNothing resolves a hub whose hub_dir holds shell
// syntax, quotes, globs and a literal backslash-n, with a file of such a
// name, and writes and removes a manifest at such a path, on every test
// node (local, busybox-only, sshd): each value is used as itself and none
// runs (the marker file never appears).
func TestHostilePathsRunNothing(t *testing.T) {
	ctx := context.Background()
	for _, n := range testNodes(t) {
		t.Run(n.name, func(t *testing.T) {
			mark := filepath.Join(n.dir, "pwned")
			hostile := strings.ReplaceAll("h $(touch MARK) `touch MARK` it's \"q\" * [a]? -rf x\\nE C ; touch MARK", "MARK", mark)
			h := newHub(t, filepath.Join(t.TempDir(), hostile))
			c := commitOf("hostile")
			repo := h.repo("model", "org/m")
			odd := "w $(touch pwned) `x` 'q' -n.bin"
			h.snapshot(repo, c, map[string]string{"config.json": "{}", odd: "weights"}, true)
			h.ref(repo, "main", c)

			mp := filepath.Join(n.dir, hostile, "mounts $(touch "+mark+").txt")
			s := &spec{HubDir: h.dir, RepoID: "org/m", RepoType: "model", Revision: "main", Target: "/model", ManifestPath: mp}
			if err := s.check(); err != nil {
				t.Fatalf("tab-free hostile names are valid config: %v", err)
			}
			items, _, err := runResolve(ctx, n.conn, n.node, []*spec{s})
			if err != nil {
				t.Fatal(err)
			}
			it := items[0]
			if it.FatalCode != "" || it.Commit != c || len(it.Files) != 2 {
				t.Fatalf("resolve: fatal %q %q, commit %q, %d files (want %s, 2): %+v", it.FatalCode, it.FatalDetail, it.Commit, len(it.Files), c, it)
			}
			names := []string{filepath.Base(it.Files[0].Path), filepath.Base(it.Files[1].Path)}
			if !(names[0] == odd || names[1] == odd) {
				t.Errorf("file names %q: want %q among them", names, odd)
			}

			content := []byte("/model/config.json\n")
			wrote, err := writeManifest(ctx, n.conn, false, mp, content, sum(string(content)), "")
			if err != nil || !wrote {
				t.Fatalf("write manifest: %v, %v", wrote, err)
			}
			got, err := n.conn.ReadFile(ctx, mp)
			if err != nil || string(got) != string(content) {
				t.Fatalf("manifest at %q: %q, %v", mp, got, err)
			}
			if kept, err := removeManifest(ctx, n.conn, false, mp, sum(string(content))); err != nil || kept != "" {
				t.Fatalf("remove manifest: %q, %v", kept, err)
			}
			if _, err := n.conn.Lstat(ctx, mp); err == nil {
				t.Errorf("manifest %s still there after remove", mp)
			}
			if _, err := n.conn.Lstat(ctx, mark); err == nil {
				t.Fatalf("an injected command ran (%s exists)", mark)
			}
		})
	}
}
