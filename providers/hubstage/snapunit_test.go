package hubstage

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

func unitSpec(t *testing.T, attrs map[string]cty.Value) *snapSpec {
	t.Helper()
	all := map[string]cty.Value{"hub_dir": cty.StringVal("/hub"), "repo_id": cty.StringVal("org/m")}
	for k, v := range attrs {
		all[k] = v
	}
	s, err := snapSpecOf(snapConfig(t, all))
	must(t, err)
	return s
}

const (
	e1 = "1111111111111111111111111111111111111111111111111111111111111111"
	e2 = "2222222222222222222222222222222222222222"
	e3 = "3333333333333333333333333333333333333333333333333333333333333333"
)

// TestSnapFits: the plan's refusal arithmetic (the tmpfs test of the
// real thing is H4's).
func TestSnapFits(t *testing.T) {
	const gib = 1 << 30
	cases := []struct {
		name           string
		xfer, free     int64
		keepFree       string
		refused        bool
		wantInMessages []string
	}{
		{"fits", 10 * gib, 20 * gib, "1GiB", false, nil},
		{"exactly free minus keep_free", 19 * gib, 20 * gib, "1GiB", false, nil},
		{"one byte over", 19*gib + 1, 20 * gib, "1GiB", true, []string{"19 GiB to transfer", "20 GiB free on /hub's filesystem", "keep_free 1 GiB", "free 1 B there"}},
		{"keep_free 0", 20 * gib, 20 * gib, "0", false, nil},
		{"nothing to move on a full disk", 0, 0, "1GiB", false, nil},
		{"full disk", 1, 0, "0", true, []string{"1 B to transfer"}},
		{"keep_free larger than free", 1, 5 * gib, "10GiB", true, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := unitSpec(t, map[string]cty.Value{"keep_free": cty.StringVal(tc.keepFree)})
			w := &snapWork{Xfer: tc.xfer, Free: tc.free}
			err := w.fits(s, "node.a")
			if (err != nil) != tc.refused {
				t.Fatalf("fits = %v, refused want %v", err, tc.refused)
			}
			if err != nil && !errors.Is(err, ErrNoFit) {
				t.Errorf("%v does not wrap ErrNoFit", err)
			}
			for _, w := range tc.wantInMessages {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestComputeWork: present, partial and shared blobs; links; the ref.
func TestComputeWork(t *testing.T) {
	l := &snapListing{Commit: commitOf("c"), Files: []snapFile{
		{Path: "a.safetensors", Etag: e1, Size: 1000},
		{Path: "dir/b.json", Etag: e2, Size: 10},
		{Path: "dir/sub/c.bin", Etag: e3, Size: 500},
		{Path: "copy.safetensors", Etag: e1, Size: 1000}, // same blob twice
	}}
	o := &snapObs{Free: 1 << 40, Ref: "-",
		Blobs:   map[string]int64{e1: 1000, e2: 9},
		Partial: map[string]int64{e3: 200},
		Links:   map[string]string{"a.safetensors": "../../blobs/" + e1, "dir/b.json": "../../blobs/" + e2},
		Others:  map[string]string{}, Hashes: map[string]string{}}
	s := unitSpec(t, nil)
	w, err := computeWork(s, l, o)
	must(t, err)
	if w.Total != 1510 || w.Present != 1200 || w.Xfer != 310 {
		t.Errorf("total/present/xfer = %d/%d/%d, want 1510/1200/310", w.Total, w.Present, w.Xfer)
	}
	if len(w.Fetch) != 2 || w.Short != 1 || w.Missing != 1 {
		t.Errorf("fetch %v short %d missing %d", w.Fetch, w.Short, w.Missing)
	}
	var links []string
	for _, f := range w.Links {
		links = append(links, f.Path)
	}
	if strings.Join(links, ",") != "copy.safetensors,dir/b.json,dir/sub/c.bin" {
		t.Errorf("links to write %v", links)
	}
	if !w.RefWrite {
		t.Error("a missing ref must be written")
	}
	sum := w.summary("hub https://h", true)
	for _, want := range []string{"commit " + short(l.Commit), "4 files", "1.475 KiB from hub https://h", "1 blobs of the wrong size", "1 wrong links"} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary %q lacks %q", sum, want)
		}
	}
	if sum := w.summary("hub https://h", false); strings.Contains(sum, "drift") || strings.Contains(sum, "present") {
		t.Errorf("a create's summary %q holds what other writers move", sum)
	}
	// include narrows the work; a path held by a file is refused.
	w, err = computeWork(unitSpec(t, map[string]cty.Value{"include": cty.ListVal([]cty.Value{cty.StringVal("*.safetensors")})}), l, o)
	must(t, err)
	if len(w.Files) != 2 || w.Xfer != 0 {
		t.Errorf("with include: %d files, %d to transfer", len(w.Files), w.Xfer)
	}
	o.Others["dir/b.json"] = "f"
	if _, err := computeWork(s, l, o); !errors.Is(err, ErrOccupied) {
		t.Errorf("a regular file at a link path: %v, want ErrOccupied", err)
	}
	if linkTarget("a/b/c.bin", e1) != "../../../../blobs/"+e1 {
		t.Errorf("linkTarget %s", linkTarget("a/b/c.bin", e1))
	}
}

// TestCheckListingRefuses: a hostile or broken listing never reaches the
// node's file system.
func TestCheckListingRefuses(t *testing.T) {
	c := commitOf("c")
	cases := map[string]snapListing{
		"parent":        {Commit: c, Files: []snapFile{{Path: "../../etc/x", Etag: e1}}},
		"absolute":      {Commit: c, Files: []snapFile{{Path: "/etc/x", Etag: e1}}},
		"unclean":       {Commit: c, Files: []snapFile{{Path: "a//b", Etag: e1}}},
		"dot":           {Commit: c, Files: []snapFile{{Path: "a/./b", Etag: e1}}},
		"tab":           {Commit: c, Files: []snapFile{{Path: "a\tb", Etag: e1}}},
		"newline":       {Commit: c, Files: []snapFile{{Path: "a\nb", Etag: e1}}},
		"backslash":     {Commit: c, Files: []snapFile{{Path: "a\\b", Etag: e1}}},
		"upper etag":    {Commit: c, Files: []snapFile{{Path: "a", Etag: strings.Repeat("A", 64)}}},
		"short etag":    {Commit: c, Files: []snapFile{{Path: "a", Etag: "abc"}}},
		"etag path":     {Commit: c, Files: []snapFile{{Path: "a", Etag: "../../../../../../etc/passwd0000000000"}}},
		"negative size": {Commit: c, Files: []snapFile{{Path: "a", Etag: e1, Size: -1}}},
		"twice":         {Commit: c, Files: []snapFile{{Path: "a", Etag: e1}, {Path: "a", Etag: e2}}},
		"bad commit":    {Commit: "main", Files: []snapFile{{Path: "a", Etag: e1}}},
	}
	for name, l := range cases {
		if err := checkListing(&l); !errors.Is(err, ErrBadListing) {
			t.Errorf("%s: %v, want ErrBadListing", name, err)
		}
	}
	ok := snapListing{Commit: c, Files: []snapFile{{Path: "with space/ü.txt", Etag: e2}}}
	if err := checkListing(&ok); err != nil {
		t.Errorf("a good listing refused: %v", err)
	}
}

func TestSnapValidate(t *testing.T) {
	r := &snapshot{}
	cases := []struct {
		name string
		set  map[string]cty.Value
		bad  string
	}{
		{"valid", nil, ""},
		{"valid full", map[string]cty.Value{"verify": cty.StringVal("full"), "parallel": cty.NumberIntVal(16), "keep_free": cty.StringVal("10GiB")}, ""},
		{"unknown sources are fine", map[string]cty.Value{"source_node": cty.UnknownVal(cty.DynamicPseudoType), "source_local_dir": cty.UnknownVal(cty.String)}, ""},
		{"verify", map[string]cty.Value{"verify": cty.StringVal("sha")}, "verify"},
		{"parallel 0", map[string]cty.Value{"parallel": cty.NumberIntVal(0)}, "parallel"},
		{"parallel fraction", map[string]cty.Value{"parallel": cty.NumberFloatVal(1.5)}, "parallel"},
		{"keep_free", map[string]cty.Value{"keep_free": cty.StringVal("lots")}, "keep_free"},
		{"endpoint", map[string]cty.Value{"endpoint": cty.StringVal("huggingface.co")}, "endpoint"},
		{"endpoint quote", map[string]cty.Value{"endpoint": cty.StringVal(`https://h/"x`)}, "endpoint"},
		{"token value in token_env", map[string]cty.Value{"token_env": cty.StringVal("hf_abc-def")}, "token_env"},
		{"transfer", map[string]cty.Value{"transfer": cty.StringVal("rsync")}, "transfer"},
		{"two sources", map[string]cty.Value{"source_node": cty.ObjectVal(map[string]cty.Value{"transport": cty.StringVal("ssh")}), "source_local_dir": cty.StringVal("/x")}, "source_local_dir"},
		{"revision", map[string]cty.Value{"revision": cty.StringVal("../x")}, "revision"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			all := map[string]cty.Value{"hub_dir": cty.StringVal("/hub"), "repo_id": cty.StringVal("org/m")}
			for k, v := range tc.set {
				all[k] = v
			}
			diags := r.Validate(context.Background(), snapConfig(t, all))
			if tc.bad == "" {
				if diags.HasErrors() {
					t.Fatalf("unexpected: %v", diags.Err())
				}
				return
			}
			if !diags.HasErrors() || !strings.Contains(diags.Err().Error(), tc.bad) {
				t.Fatalf("want an error about %s, got %v", tc.bad, diags.Err())
			}
		})
	}
}

// TestHubTokenRefusedUnquoted: a token the curl config cannot carry is
// refused, and the message never holds any of it.
func TestHubTokenRefusedUnquoted(t *testing.T) {
	for _, tok := range []string{`hf_a"b`, "hf_a b", `hf_a\b`, "hf_a\nheader = \"X: y\""} {
		env := &snapEnv{getenv: func(k string) string {
			if k == "HF_TOKEN" {
				return tok
			}
			return ""
		}}
		_, err := newHubSource(env, unitSpec(t, nil))
		if !errors.Is(err, ErrToken) {
			t.Fatalf("token %q: %v, want ErrToken", tok, err)
		}
		if strings.Contains(err.Error(), "hf_a") {
			t.Errorf("the error shows the token: %v", err)
		}
	}
	env := &snapEnv{getenv: func(k string) string { return map[string]string{"HF_ENDPOINT": "https://mirror.example/"}[k] }}
	src, err := newHubSource(env, unitSpec(t, nil))
	must(t, err)
	if src.Describe() != "hub https://mirror.example" {
		t.Errorf("HF_ENDPOINT not used: %s", src.Describe())
	}
}
