package hubstage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// resolveOn resolves s on n and returns the entries or the error.
func resolveOn(t *testing.T, n testNode, s *spec) (*resolution, error) {
	t.Helper()
	if err := s.check(); err != nil {
		t.Fatalf("spec: %v", err)
	}
	raws, _, err := runResolve(context.Background(), n.conn, n.node, []*spec{s})
	if err != nil {
		t.Fatalf("runResolve on %s: %v", n.name, err)
	}
	return build(s, raws[0])
}

// want is an expected entry: target -> source, with the hub's real path
// written as $HUB.
type want map[string]string

func checkEntries(t *testing.T, h *hub, res *resolution, w want) {
	t.Helper()
	got := want{}
	var targets []string
	for _, e := range res.Entries {
		got[e.Target] = strings.Replace(e.Source, h.real(h.dir), "$HUB", 1)
		targets = append(targets, e.Target)
	}
	if !reflect.DeepEqual(got, w) {
		t.Errorf("entries:\n got %v\nwant %v", got, w)
	}
	for i := 1; i < len(targets); i++ {
		if targets[i-1] >= targets[i] {
			t.Errorf("entries not sorted by target: %q before %q", targets[i-1], targets[i])
		}
	}
	for _, e := range res.Entries {
		fi, err := os.Lstat(e.Source)
		if err != nil || !fi.Mode().IsRegular() {
			t.Errorf("source %s is not a regular file (%v)", e.Source, err)
		}
	}
}

func TestResolveLayouts(t *testing.T) {
	for _, n := range testNodes(t) {
		t.Run(n.name, func(t *testing.T) {
			h := newHub(t, t.TempDir())
			c1, c2, c3 := commitOf("one"), commitOf("two"), commitOf("pr1")
			blob := func(repo, content string) string { return "$HUB/" + repo + "/blobs/" + sum(content) }
			shared := func(content string) string { return "$HUB/blobs/" + sum(content)[:2] + "/" + sum(content) }

			// A plain model repo: blobs are files in the repo.
			plain := h.repo("model", "org/plain")
			h.snapshot(plain, c1, map[string]string{"config.json": "{}", "model.safetensors": "weights"}, false)
			h.ref(plain, "main", c1)

			// The shared chain, nested folders (engrams/ as in the seed), a
			// folder symlink, refs/pr/1 and a dataset.
			chain := h.repo("model", "coolbho3k/DeepSeek-V4.1-Flash-EXL3-3bpw")
			h.snapshot(chain, c1, map[string]string{
				"config.json": "{cfg}", "model-00001.safetensors": "shard1", "engrams/layer0/e.bin": "e0", "engrams/layer1/e.bin": "e1",
			}, true)
			h.snapshot(chain, c2, map[string]string{"config.json": "{cfg2}"}, true)
			h.link(filepath.Join(chain, "snapshots", c2, "engrams"), filepath.Join(chain, "snapshots", c1, "engrams"))
			h.snapshot(chain, c3, map[string]string{"config.json": "{pr}"}, true)
			h.ref(chain, "main", c2+"\n")
			h.ref(chain, "refs/pr/1", c3)
			ds := h.repo("dataset", "org/data")
			h.snapshot(ds, c1, map[string]string{"train/part-0.parquet": "rows"}, false)
			h.ref(ds, "main", c1)

			chainDir := filepath.Base(chain)
			cases := []struct {
				name   string
				spec   spec
				commit string
				want   want
			}{
				{"plain repo blobs", spec{RepoID: "org/plain", Revision: "main"}, c1, want{
					"/model/config.json":       blob("models--org--plain", "{}"),
					"/model/model.safetensors": blob("models--org--plain", "weights"),
				}},
				{"shared blob chain and nested folders", spec{RepoID: "coolbho3k/DeepSeek-V4.1-Flash-EXL3-3bpw", Revision: c1}, c1, want{
					"/model/config.json":             shared("{cfg}"),
					"/model/model-00001.safetensors": shared("shard1"),
					"/model/engrams/layer0/e.bin":    shared("e0"),
					"/model/engrams/layer1/e.bin":    shared("e1"),
				}},
				{"ref main with a folder symlink", spec{RepoID: "coolbho3k/DeepSeek-V4.1-Flash-EXL3-3bpw"}, c2, want{
					"/model/config.json":          shared("{cfg2}"),
					"/model/engrams/layer0/e.bin": shared("e0"),
					"/model/engrams/layer1/e.bin": shared("e1"),
				}},
				{"refs/pr/1", spec{RepoID: "coolbho3k/DeepSeek-V4.1-Flash-EXL3-3bpw", Revision: "refs/pr/1", Target: "/draft-exl3"}, c3, want{
					"/draft-exl3/config.json": shared("{pr}"),
				}},
				{"include and exclude", spec{RepoID: "coolbho3k/DeepSeek-V4.1-Flash-EXL3-3bpw", Revision: c1, Include: []string{"*.json", "engrams/"}, Exclude: []string{"*/layer1/*"}}, c1, want{
					"/model/config.json":          shared("{cfg}"),
					"/model/engrams/layer0/e.bin": shared("e0"),
				}},
				{"dataset", spec{RepoID: "org/data", RepoType: "dataset", Target: "/data"}, c1, want{
					"/data/train/part-0.parquet": blob("datasets--org--data", "rows"),
				}},
			}
			_ = chainDir
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					s := tc.spec
					s.HubDir = h.dir
					if s.RepoType == "" {
						s.RepoType = "model"
					}
					if s.Revision == "" {
						s.Revision = "main"
					}
					if s.Target == "" {
						s.Target = "/model"
					}
					res, err := resolveOn(t, n, &s)
					if err != nil {
						t.Fatal(err)
					}
					if res.Commit != tc.commit {
						t.Errorf("commit %s, want %s", res.Commit, tc.commit)
					}
					checkEntries(t, h, res, tc.want)
					var total int64
					for _, e := range res.Entries {
						fi, _ := os.Stat(e.Source)
						total += fi.Size()
					}
					if res.TotalBytes != total || total == 0 {
						t.Errorf("total_bytes %d, want %d", res.TotalBytes, total)
					}
					if !strings.HasPrefix(res.Digest, "sha256:") {
						t.Errorf("digest %q", res.Digest)
					}
				})
			}
		})
	}
}

func TestResolveRefusals(t *testing.T) {
	for _, n := range testNodes(t) {
		t.Run(n.name, func(t *testing.T) {
			cases := []struct {
				name string
				// setup builds the repo (at repo) and returns the revision.
				setup    func(h *hub, repo string) string
				spec     spec
				err      error
				mentions []string
			}{
				{name: "dangling link", err: ErrDangling, mentions: []string{"model.safetensors"}, setup: func(h *hub, repo string) string {
					snap := h.snapshot(repo, commitOf("a"), map[string]string{"config.json": "{}"}, false)
					h.link(filepath.Join(snap, "model.safetensors"), filepath.Join(repo, "blobs", sum("never")))
					return commitOf("a")
				}},
				{name: "interrupted download", err: ErrIncomplete, mentions: []string{"model.safetensors", ".incomplete"}, setup: func(h *hub, repo string) string {
					snap := h.snapshot(repo, commitOf("a"), map[string]string{"config.json": "{}"}, false)
					b := filepath.Join(repo, "blobs", sum("partial"))
					must(t, os.WriteFile(b+".incomplete", []byte("par"), 0o644))
					h.link(filepath.Join(snap, "model.safetensors"), b)
					return commitOf("a")
				}},
				{name: "link to an .incomplete blob", err: ErrIncomplete, mentions: []string{"model.safetensors"}, setup: func(h *hub, repo string) string {
					snap := h.snapshot(repo, commitOf("a"), map[string]string{"config.json": "{}"}, false)
					b := filepath.Join(repo, "blobs", sum("partial")+".incomplete")
					must(t, os.WriteFile(b, []byte("par"), 0o644))
					h.link(filepath.Join(snap, "model.safetensors"), b)
					return commitOf("a")
				}},
				{name: "link escapes the hub", err: ErrEscapesHub, mentions: []string{"evil.json", "outside"}, setup: func(h *hub, repo string) string {
					snap := h.snapshot(repo, commitOf("a"), map[string]string{"config.json": "{}"}, false)
					out := filepath.Join(filepath.Dir(h.dir), "outside")
					must(t, os.WriteFile(out, []byte("secret"), 0o644))
					h.link(filepath.Join(snap, "evil.json"), out)
					return commitOf("a")
				}},
				{name: "repo blob escapes the hub", err: ErrEscapesHub, mentions: []string{"w.bin"}, setup: func(h *hub, repo string) string {
					snap := h.snapshot(repo, commitOf("a"), map[string]string{"config.json": "{}"}, false)
					out := filepath.Join(filepath.Dir(h.dir), "outside-blob")
					must(t, os.WriteFile(out, []byte("x"), 0o644))
					b := filepath.Join(repo, "blobs", sum("x"))
					h.link(b, out)
					h.link(filepath.Join(snap, "sub/w.bin"), b)
					return commitOf("a")
				}},
				{name: "file link loop", err: ErrLinkLoop, mentions: []string{"a.bin"}, setup: func(h *hub, repo string) string {
					snap := h.snapshot(repo, commitOf("a"), map[string]string{"config.json": "{}"}, false)
					must(t, os.Symlink("b.bin", filepath.Join(snap, "a.bin")))
					must(t, os.Symlink("a.bin", filepath.Join(snap, "b.bin")))
					return commitOf("a")
				}},
				{name: "folder link loop", err: ErrLinkLoop, mentions: []string{"up"}, setup: func(h *hub, repo string) string {
					snap := h.snapshot(repo, commitOf("a"), map[string]string{"config.json": "{}"}, false)
					must(t, os.Symlink(".", filepath.Join(snap, "up")))
					return commitOf("a")
				}},
				{name: "not a regular file", err: ErrNotRegular, mentions: []string{"pipe"}, setup: func(h *hub, repo string) string {
					snap := h.snapshot(repo, commitOf("a"), map[string]string{"config.json": "{}"}, false)
					must(t, syscall.Mkfifo(filepath.Join(snap, "pipe"), 0o644))
					return commitOf("a")
				}},
				{name: "name with a tab", err: ErrBadName, mentions: []string{"bad?name"}, setup: func(h *hub, repo string) string {
					h.snapshot(repo, commitOf("a"), map[string]string{"config.json": "{}", "bad\tname": "t"}, false)
					return commitOf("a")
				}},
				{name: "name that is not NFC", err: ErrBadName, mentions: []string{"NFC"}, setup: func(h *hub, repo string) string {
					h.snapshot(repo, commitOf("a"), map[string]string{"config.json": "{}", "cafe\u0301.bin": "t"}, false)
					return commitOf("a")
				}},
				{name: "missing ref", err: ErrNoRef, mentions: []string{"refs/main"}, setup: func(h *hub, repo string) string {
					h.snapshot(repo, commitOf("a"), map[string]string{"config.json": "{}"}, false)
					return "main"
				}},
				{name: "ref without a commit", err: ErrBadRef, mentions: []string{"refs/main"}, setup: func(h *hub, repo string) string {
					h.snapshot(repo, commitOf("a"), map[string]string{"config.json": "{}"}, false)
					h.ref(repo, "main", "../../etc")
					return "main"
				}},
				{name: "missing snapshot", err: ErrNoSnapshot, mentions: []string{commitOf("b")}, setup: func(h *hub, repo string) string {
					h.snapshot(repo, commitOf("a"), map[string]string{"config.json": "{}"}, false)
					h.ref(repo, "main", commitOf("b"))
					return "main"
				}},
				{name: "missing repo", err: ErrNoRepo, mentions: []string{"models--org--m"}, setup: func(h *hub, repo string) string {
					return "main"
				}},
				{name: "nothing selected", err: ErrEmpty, spec: spec{Include: []string{"*.gguf"}}, setup: func(h *hub, repo string) string {
					h.snapshot(repo, commitOf("a"), map[string]string{"config.json": "{}"}, false)
					return commitOf("a")
				}},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					h := newHub(t, t.TempDir())
					s := tc.spec
					s.HubDir, s.RepoID, s.RepoType, s.Target = h.dir, "org/m", "model", "/model"
					s.Revision = tc.setup(h, h.repo("model", "org/m"))
					_, err := resolveOn(t, n, &s)
					if !errors.Is(err, tc.err) {
						t.Fatalf("error %v, want %v", err, tc.err)
					}
					t.Log(err)
					for _, m := range tc.mentions {
						if !strings.Contains(err.Error(), m) {
							t.Errorf("error %q does not name %q", err, m)
						}
					}
				})
			}
		})
	}
}

// A bad file that include/exclude leaves out is no reason to refuse.
func TestResolveExcludedBadFileIgnored(t *testing.T) {
	for _, n := range testNodes(t) {
		t.Run(n.name, func(t *testing.T) {
			h := newHub(t, t.TempDir())
			repo := h.repo("model", "org/m")
			snap := h.snapshot(repo, commitOf("a"), map[string]string{"config.json": "{}"}, false)
			h.link(filepath.Join(snap, "original/broken.pth"), filepath.Join(repo, "blobs", sum("never")))
			s := spec{HubDir: h.dir, RepoID: "org/m", RepoType: "model", Revision: commitOf("a"), Target: "/model", Exclude: []string{"original/"}}
			res, err := resolveOn(t, n, &s)
			if err != nil {
				t.Fatal(err)
			}
			checkEntries(t, h, res, want{"/model/config.json": "$HUB/models--org--m/blobs/" + sum("{}")})
		})
	}
}

// build checks targets itself: output it cannot trust is refused.
func TestBuildTargetRules(t *testing.T) {
	snap := "/hub/models--o--m/snapshots/c"
	cases := []struct {
		name  string
		files []rawFile
		err   error
	}{
		{"dot-dot", []rawFile{{Path: snap + "/a/../../x", Real: "/hub/blobs/1"}}, ErrBadTarget},
		{"dot segment", []rawFile{{Path: snap + "/./x", Real: "/hub/blobs/1"}}, ErrBadTarget},
		{"double slash", []rawFile{{Path: snap + "/a//x", Real: "/hub/blobs/1"}}, ErrBadTarget},
		{"duplicate", []rawFile{{Path: snap + "/x", Real: "/hub/blobs/1"}, {Path: snap + "/x", Real: "/hub/blobs/2"}}, ErrBadTarget},
		{"colon", []rawFile{{Path: snap + "/a:b", Real: "/hub/blobs/1"}}, ErrBadTarget},
		{"hub prefix is not a folder prefix", []rawFile{{Path: snap + "/x", Real: "/hubby/blobs/1"}}, ErrEscapesHub},
		{"clean", []rawFile{{Path: snap + "/b", Real: "/hub/blobs/2"}, {Path: snap + "/a/x", Real: "/hub/blobs/1"}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &spec{HubDir: "/hub", RepoID: "o/m", RepoType: "model", Revision: "main", Target: "/model"}
			must(t, s.check())
			res, err := build(s, &rawItem{RealHub: "/hub", Commit: "c", Snap: snap, Files: tc.files, Ended: true})
			if !errors.Is(err, tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if err == nil && (res.Entries[0].Target != "/model/a/x" || res.Entries[1].Target != "/model/b") {
				t.Errorf("entries %v not sorted by target", res.Entries)
			}
		})
	}
}
