package plans

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk"
)

func TestRoundTrip(t *testing.T) {
	after := cty.ObjectVal(map[string]cty.Value{
		"path":        cty.StringVal("/srv/kit"),
		"tree_digest": cty.UnknownVal(cty.String),
		"params":      cty.MapVal(map[string]cty.Value{"modeset": cty.StringVal("1")}),
		"gone":        cty.NullVal(cty.Number),
	})
	p := &Plan{
		Lineage: "L", Serial: 7, Mode: NormalMode, ConfigDigest: testDigest, Created: testCreated,
		Variables: map[string]cty.Value{"n": cty.NumberIntVal(2)},
		Changes: []*ResourceChange{{
			Addr: `gitkit_checkout.kit["a"]`, Resource: "gitkit_checkout.kit", Type: "gitkit_checkout",
			Provider: "gitkit", Node: &sdk.Node{Name: "node.a", Transport: "ssh", Host: "127.0.0.1", Port: 22},
			PriorNode: &sdk.Node{Name: "node.a", Transport: "ssh", Host: "127.0.0.2", Port: 22},
			Action:    DeleteThenCreate, Before: cty.ObjectVal(map[string]cty.Value{"path": cty.StringVal("/srv/old")}), After: after,
			RequiresReplace: []cty.Path{cty.GetAttrPath("commit"), cty.GetAttrPath("m").Index(cty.StringVal("k"))},
			PlannedPrivate:  []byte("x"),
		}},
		Outputs:            map[string]*OutputChange{"o": {Before: cty.NullVal(cty.String), After: cty.UnknownVal(cty.String)}},
		ExcludeUnreachable: true,
		Excluded:           []ExcludedNode{{Node: `node.n["d"]`, Reason: "connection refused", Instances: []string{`node_command.c["d"]`}}},
	}
	got := roundTrip(t, p)
	if !got.ExcludeUnreachable || len(got.Excluded) != 1 || got.Excluded[0].Node != `node.n["d"]` ||
		got.Excluded[0].Reason != "connection refused" || len(got.Excluded[0].Instances) != 1 {
		t.Errorf("nodes left out lost: %v %+v", got.ExcludeUnreachable, got.Excluded)
	}
	c := got.Changes[0]
	if !c.After.RawEquals(after) {
		t.Errorf("after = %#v", c.After)
	}
	if c.After.GetAttr("tree_digest").IsKnown() {
		t.Error("unknown value did not survive")
	}
	if len(c.RequiresReplace) != 2 || !c.RequiresReplace[1].Equals(cty.GetAttrPath("m").Index(cty.StringVal("k"))) {
		t.Errorf("requires replace = %#v", c.RequiresReplace)
	}
	if c.Node.Host != "127.0.0.1" || c.PriorNode.Host != "127.0.0.2" || got.Serial != 7 || string(c.PlannedPrivate) != "x" {
		t.Errorf("plan = %+v", got)
	}
	if !got.Variables["n"].RawEquals(cty.NumberIntVal(2)) {
		t.Errorf("variables = %#v", got.Variables)
	}
	if got.Outputs["o"].After.IsKnown() {
		t.Error("output unknown lost")
	}
}

func TestReadRejectsOtherFiles(t *testing.T) {
	for _, in := range []string{"", "hello world", magic + "not gzip"} {
		if _, err := Read(strings.NewReader(in)); !errors.Is(err, ErrNotPlanFile) {
			t.Errorf("Read(%q) = %v, want ErrNotPlanFile", in, err)
		}
	}
}

func TestCheckFresh(t *testing.T) {
	p := &Plan{Lineage: "L", Serial: 3}
	if err := p.CheckFresh("L", 3); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		lineage string
		serial  uint64
		want    string
	}{{"L", 4, "serial 3, now 4"}, {"M", 3, "lineage"}, {"", 3, "lineage"}} {
		err := p.CheckFresh(tc.lineage, tc.serial)
		if !errors.Is(err, ErrStalePlan) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckFresh(%s,%d) = %v", tc.lineage, tc.serial, err)
		}
	}
	// A plan made against no state applies only to a state never written.
	q := &Plan{}
	if err := q.CheckFresh("M", 0); err != nil {
		t.Errorf("a plan of no state on a new state: %v", err)
	}
	if err := q.CheckFresh("M", 1); !errors.Is(err, ErrStalePlan) {
		t.Errorf("a plan of no state on a written state: %v", err)
	}
}

// TestWriteFileMode: a plan file is 0600 whether it is new or replaces a
// world-readable file, and a reader holding the old file open never sees
// the new plan through it.
func TestWriteFileMode(t *testing.T) {
	dir := t.TempDir()
	p := &Plan{Lineage: "L", Serial: 1, Mode: NormalMode, ConfigDigest: testDigest, Created: testCreated, Variables: map[string]cty.Value{"token": cty.StringVal("s3cret")}}
	for _, tc := range []struct {
		name    string
		prepare func(path string)
	}{
		{"new file", func(string) {}},
		{"replaces a 0644 file", func(path string) {
			if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"replaces a 0666 file", func(path string) {
			if err := os.WriteFile(path, []byte("old"), 0o666); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, 0o666); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".plan")
			tc.prepare(path)
			var held *os.File
			if _, err := os.Stat(path); err == nil {
				f, err := os.Open(path) // someone who could read the old file
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				held = f
			}
			if err := WriteFile(path, p); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("plan file mode %v, want 0600", fi.Mode().Perm())
			}
			if got, err := ReadFile(path); err != nil || got.Variables["token"].AsString() != "s3cret" {
				t.Fatalf("read back: %v, %v", got, err)
			}
			if held != nil {
				b, _ := io.ReadAll(held)
				if string(b) != "old" {
					t.Errorf("a reader of the old file sees %q, want the old content only", b)
				}
			}
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if strings.Contains(e.Name(), ".tmp") {
					t.Errorf("temporary file %s left behind", e.Name())
				}
			}
		})
	}
}

const testDigest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

var testCreated = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// validFile is a plan file with every required field, and no change.
func validFile() filePlan {
	return filePlan{FormatVersion: FormatVersion, Mode: NormalMode, Lineage: "L", Serial: 1, ConfigDigest: testDigest, Created: testCreated}
}

// val is v as a plan file holds it.
func val(s string) fileValue {
	b, err := encodeValue(cty.StringVal(s))
	if err != nil {
		panic(err)
	}
	return b
}

// crafted writes fp as a plan file the way Write frames it.
func crafted(t *testing.T, fp filePlan) []byte {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteString(magic)
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(&fp); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	return buf.Bytes()
}

// Crafted plan files (issue 11, point 4): each is refused with
// ErrNotPlanFile and a reason, never a panic or an allocation the size of
// a declared length.
func TestCraftedPlanFiles(t *testing.T) {
	change := func(mut func(*fileChange), mode ...Mode) filePlan {
		c := fileChange{Addr: "sparkform_data.x", Resource: "sparkform_data.x", Type: "sparkform_data", Provider: "sparkform", Action: Create}
		mut(&c)
		fp := validFile()
		fp.Changes = []fileChange{c}
		if len(mode) > 0 {
			fp.Mode = mode[0]
		}
		return fp
	}
	file := func(mut func(*filePlan)) filePlan {
		fp := validFile()
		mut(&fp)
		return fp
	}
	// 24 bytes: a dynamic value of type list(string) declaring 2^31-1 elements.
	hugeList := append(append([]byte{0x92, 0xb1}, `["list","string"]`...), 0xdd, 0x7f, 0xff, 0xff, 0xff)
	for _, tc := range []struct {
		name string
		fp   filePlan
		want string
	}{
		{"empty replace-path element", change(func(c *fileChange) { c.RequiresReplace = [][]string{{".a", ""}} }), "empty replace-path element"},
		{"bare dot", change(func(c *fileChange) { c.RequiresReplace = [][]string{{"."}} }), "names no attribute"},
		{"bad index", change(func(c *fileChange) { c.RequiresReplace = [][]string{{"#x"}} }), "not a whole-number index"},
		{"unknown step", change(func(c *fileChange) { c.RequiresReplace = [][]string{{"?"}} }), "not an attribute or index step"},
		{"2^31-1 list elements", change(func(c *fileChange) { c.After = hugeList }), "2147483647 values declared"},
		{"huge variable", file(func(fp *filePlan) { fp.Variables = map[string]fileValue{"v": hugeList} }), "values declared"},
		{"unknown action", change(func(c *fileChange) { c.Action = "explode" }), `unknown action "explode"`},
		{"no address", change(func(c *fileChange) { c.Addr = "" }), "no instance address"},
		{"unknown mode", file(func(fp *filePlan) { fp.Mode = "sideways" }), `unknown plan mode "sideways"`},
		{"not msgpack", change(func(c *fileChange) { c.Before = fileValue{0xc1} }), "not msgpack"},
		// Issue 31: every field is checked, and a change the apply could
		// not carry out is refused here, not silently dropped.
		{"blank config digest", file(func(fp *filePlan) { fp.ConfigDigest = "" }), "configuration digest \"\" is not a SHA-256 digest"},
		{"short config digest", file(func(fp *filePlan) { fp.ConfigDigest = "abc" }), "not a SHA-256 digest"},
		{"blank lineage", file(func(fp *filePlan) { fp.Lineage = "" }), "no state lineage"},
		{"lineage with a newline", file(func(fp *filePlan) { fp.Lineage = "L\nx" }), "control or invisible"},
		{"no creation time", file(func(fp *filePlan) { fp.Created = time.Time{} }), "no creation time"},
		// Issue 32: a node left out is printed by show and apply.
		{"excluded node with an escape", file(func(fp *filePlan) { fp.Excluded = []ExcludedNode{{Node: "node.n\x1b[2J", Reason: "r"}} }), "control or invisible"},
		{"excluded reason of two lines", file(func(fp *filePlan) { fp.Excluded = []ExcludedNode{{Node: "node.n", Reason: "a\nApply complete!"}} }), "not one line of plain text"},
		{"excluded bad address", file(func(fp *filePlan) {
			fp.Excluded = []ExcludedNode{{Node: "node.n", Reason: "r", Instances: []string{"../x"}}}
		}), "excluded instance"},
		{"address with ../", change(func(c *fileChange) { c.Addr = "sparkform_data.x/../../y" }), "not a resource instance address"},
		{"address with a newline", change(func(c *fileChange) { c.Addr = "sparkform_data.x\nApply complete!" }), "control or invisible"},
		{"address with a NUL", change(func(c *fileChange) { c.Addr = "sparkform_data.x\x00" }), "control or invisible"},
		{"host alias with an escape", change(func(c *fileChange) {
			c.Node = sdk.Node{Name: "node.a", Transport: "ssh", Host: "127.0.0.1", Port: 22, HostAlias: "spark-01\x1b[2J"}
		}), "control or invisible"},
		{"address with ESC", change(func(c *fileChange) { c.Addr = "sparkform_data.x[\"\x1b[2K\"]" }), "control or invisible"},
		{"address with a bidi override", change(func(c *fileChange) { c.Addr = "sparkform_data.x[\"\u202e\"]" }), "control or invisible"},
		{"address not as written", change(func(c *fileChange) { c.Addr = `sparkform_data.x[ "a" ]` }), "not written the way sparkform writes it"},
		{"resource not the address's", change(func(c *fileChange) { c.Resource = "sparkform_data.y" }), "do not match the address"},
		{"type not the address's", change(func(c *fileChange) { c.Type = "docker_container" }), "do not match the address"},
		{"provider not the type's", change(func(c *fileChange) { c.Provider = "docker" }), `provider "docker" does not serve`},
		{"unknown transport", change(func(c *fileChange) { c.Node = sdk.Node{Name: "node.a", Transport: "telnet"} }), `transport "telnet"`},
		{"ssh node without a port", change(func(c *fileChange) { c.Node = sdk.Node{Name: "node.a", Transport: "ssh", Host: "h"} }), "port 0"},
		{"node name with ESC", change(func(c *fileChange) { c.Node = sdk.Node{Name: "node.a\x1b]0;x\a", Transport: "local"} }), "control or invisible"},
		{"no transport but a name", change(func(c *fileChange) { c.PriorNode = sdk.Node{Name: "node.a"} }), "no transport"},
		{"summary attribute not an identifier", change(func(c *fileChange) { c.SummaryAttrs = []string{"a\nb"} }), "not an identifier"},
		{"sensitive path with a newline", change(func(c *fileChange) { c.SensitiveAttrs = []string{"a\nb"} }), "control or invisible"},
		{"sensitive path that does not parse", change(func(c *fileChange) { c.SensitiveAttrs = []string{"input[x"} }), "not a sensitive path"},
		{"sensitive path not from an attribute", change(func(c *fileChange) { c.SensitiveAttrs = []string{`["a b"].c`} }), "does not start with an attribute name"},
		{"prior sensitive path that does not parse", change(func(c *fileChange) { c.PriorSensitiveAttrs = []string{"a..b"} }), "not a sensitive path"},
		{"drift sensitive path that does not parse", file(func(fp *filePlan) {
			fp.Drift = []fileDrift{{Addr: "sparkform_data.x", Type: "sparkform_data", Before: val("x"), After: val("y"), SensitiveAttrs: []string{"input["}}}
		}), "not a sensitive path"},
		{"create with a prior", change(func(c *fileChange) { c.Before, c.After = val("x"), val("y") }), "action create needs no prior object"},
		{"create of nothing", change(func(c *fileChange) { c.After = nil }), "action create needs no prior object and a planned one"},
		{"delete leaving an object", change(func(c *fileChange) { c.Action, c.Before, c.After = Delete, val("x"), val("y") }), "action delete needs a prior object and no planned one"},
		{"update of nothing", change(func(c *fileChange) { c.Action, c.After = Update, val("y") }), "action update needs a prior object"},
		{"create in a destroy plan", change(func(c *fileChange) { c.After = val("x") }, DestroyMode), "a destroy plan does not create"},
		{"change in a refresh-only plan", change(func(c *fileChange) { c.After = val("x") }, RefreshOnlyMode), "a refresh-only plan does not create"},
		{"bad target", file(func(fp *filePlan) { fp.Targets = []string{"../x"} }), "not a resource or module address"},
		{"bad replace", file(func(fp *filePlan) { fp.Replace = []string{"x\ny"} }), "control or invisible"},
		{"bad variable name", file(func(fp *filePlan) { fp.Variables = map[string]fileValue{"a b": val("x")} }), "not an identifier"},
		{"bad output name", file(func(fp *filePlan) { fp.Outputs = map[string]fileOutput{"\x1b": {After: val("x")}} }), "not an identifier"},
		{"drift address with a newline", file(func(fp *filePlan) {
			fp.Drift = []fileDrift{{Addr: "sparkform_data.x\n", Type: "sparkform_data", Before: val("x"), After: val("y")}}
		}), "control or invisible"},
		{"drift type not the address's", file(func(fp *filePlan) {
			fp.Drift = []fileDrift{{Addr: "sparkform_data.x", Type: "gitkit_checkout", Before: val("x"), After: val("y")}}
		}), "does not match the address"},
		{"drift listed twice", file(func(fp *filePlan) {
			d := fileDrift{Addr: "sparkform_data.x", Type: "sparkform_data", Before: val("x"), After: val("y")}
			fp.Drift = []fileDrift{d, d}
		}), "listed twice"},
		{"drift of nothing", file(func(fp *filePlan) {
			fp.Drift = []fileDrift{{Addr: "sparkform_data.x", Type: "sparkform_data", After: val("y")}}
		}), "has no prior object"},
		{"move from a module address", file(func(fp *filePlan) {
			fp.Moves = []Move{{From: "module.m", To: "sparkform_data.y"}}
		}), "is not a resource instance address"},
		{"move of a deposed object", file(func(fp *filePlan) {
			fp.Moves = []Move{{From: "sparkform_data.x#deposed", To: "sparkform_data.y"}}
		}), "is not a resource instance address"},
		{"move onto itself", file(func(fp *filePlan) {
			fp.Moves = []Move{{From: "sparkform_data.x", To: "sparkform_data.x"}}
		}), "moved onto itself or twice"},
		{"two moves to one address", file(func(fp *filePlan) {
			fp.Moves = []Move{{From: "sparkform_data.x", To: "sparkform_data.z"}, {From: "sparkform_data.y", To: "sparkform_data.z"}}
		}), "moved onto itself or twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(crafted(t, tc.fp)))
			if !errors.Is(err, ErrNotPlanFile) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Read: %v, want ErrNotPlanFile saying %q", err, tc.want)
			}
		})
	}
	// The base every case changes one thing of is a plan file that reads.
	if _, err := Read(bytes.NewReader(crafted(t, change(func(c *fileChange) { c.After = val("x") })))); err != nil {
		t.Fatalf("the unchanged crafted plan: %v", err)
	}
	// Sensitive entries are paths (config.SensitivePaths), kept as they are.
	paths := []string{"input", "input.env.TOKEN", "input.args[1]", `input.env["HF TOKEN"]`}
	p, err := Read(bytes.NewReader(crafted(t, change(func(c *fileChange) {
		c.After, c.SensitiveAttrs, c.PriorSensitiveAttrs = val("x"), paths, paths
	}))))
	if err != nil || !slices.Equal(p.Changes[0].SensitiveAttrs, paths) || !slices.Equal(p.Changes[0].PriorSensitiveAttrs, paths) {
		t.Fatalf("a plan with sensitive paths: %v", err)
	}
	// A plan made before any state exists names no lineage, at serial 0.
	if _, err := Read(bytes.NewReader(crafted(t, file(func(fp *filePlan) { fp.Lineage, fp.Serial = "", 0 })))); err != nil {
		t.Fatalf("a plan made against no state: %v", err)
	}
	if len(hugeList) > 26 {
		t.Fatalf("the crafted value is %d bytes", len(hugeList))
	}
}

// A gzip stream that unpacks past maxPlanBytes is refused without holding
// it all in memory.
func TestPlanFileUnpackLimit(t *testing.T) {
	defer func(old int64) { maxPlanBytes = old }(maxPlanBytes)
	maxPlanBytes = 4 << 20
	var buf bytes.Buffer
	buf.WriteString(magic)
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write([]byte(`{"Notes":["`))
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	for range maxPlanBytes>>20 + 1 {
		zw.Write(chunk)
	}
	zw.Close()
	_, err := Read(&buf)
	if !errors.Is(err, ErrNotPlanFile) || !strings.Contains(err.Error(), "unpacks to more than") {
		t.Fatalf("Read: %v", err)
	}
}

// A FIFO (or any file that is not a regular file) given as a plan file is
// refused at once, not read until someone writes to it (issue 31).
func TestReadFileRefusesNonRegular(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo.plan")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ReadFile(path)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotPlanFile) || !strings.Contains(err.Error(), "it is a FIFO, not a regular file") {
			t.Fatalf("ReadFile(fifo) = %v, want ErrNotPlanFile saying it is not a regular file", err)
		}
	case <-time.After(5 * time.Second):
		// Unblock the reader so the test ends.
		if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("ReadFile of a FIFO blocked for 5 s")
	}
	if _, err := ReadFile(t.TempDir()); !errors.Is(err, ErrNotPlanFile) {
		t.Errorf("ReadFile(directory) = %v, want ErrNotPlanFile", err)
	}
}

// gzipBomb is a plan file whose gzip stream unpacks to n bytes
// inside a JSON string: a few hundred KB that unpack past any bound.
func gzipBomb(t *testing.T, n int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteString(magic)
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write([]byte(`{"Notes":["`))
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	for range n >> 20 {
		zw.Write(chunk)
	}
	zw.Close()
	return buf.Bytes()
}

// A 300 MB gzip bomb is refused with memory bounded: the unpacked size is
// counted before anything is decoded (issue 31: it was refused only after
// 797 MB RSS). The bound is the real one, not a test-sized one.
func TestPlanFileGzipBombMemory(t *testing.T) {
	bomb := gzipBomb(t, 300<<20)
	path := filepath.Join(t.TempDir(), "bomb.plan")
	if err := os.WriteFile(path, bomb, 0o600); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadFile(path)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrNotPlanFile) || !strings.Contains(err.Error(), "unpacks to more than") {
		t.Fatalf("ReadFile(bomb) = %v", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("refusing a %d-byte gzip bomb allocated %d MB, want under 16 MB", len(bomb), alloc>>20)
	}
}

// Accidental damage to a plan file is never silent (issue 31): flipping
// any one byte makes the file refused (gzip's CRC-32 over the whole
// unpacked plan is checked, as the size is counted before decoding), or,
// in the gzip header's informational bytes, reads back the same plan.
func TestPlanFileDamageIsCaught(t *testing.T) {
	p := &Plan{Lineage: "L", Serial: 3, Mode: NormalMode, ConfigDigest: testDigest, Created: testCreated,
		Variables: map[string]cty.Value{"n": cty.StringVal("value")},
		Changes: []*ResourceChange{{Addr: "sparkform_data.x", Resource: "sparkform_data.x", Type: "sparkform_data", Provider: "sparkform",
			Action: Update, Before: cty.StringVal("a"), After: cty.StringVal("b")}}}
	var buf bytes.Buffer
	if err := Write(&buf, p); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	var want bytes.Buffer
	if err := Write(&want, roundTrip(t, p)); err != nil {
		t.Fatal(err)
	}
	refused := 0
	for i := range good {
		bad := bytes.Clone(good)
		bad[i] ^= 0x20
		got, err := Read(bytes.NewReader(bad))
		if err != nil {
			refused++
			continue
		}
		var again bytes.Buffer
		if err := Write(&again, got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again.Bytes()[len(magic)+10:], want.Bytes()[len(magic)+10:]) {
			t.Errorf("byte %d of %d flipped: read as a different plan without an error", i, len(good))
		}
	}
	if refused < len(good)-16 {
		t.Errorf("only %d of %d one-byte flips were refused", refused, len(good))
	}
}
