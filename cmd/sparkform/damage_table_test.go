package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The damage table (issue 31, section 2): a state file written by two
// real applies (31 instances, history, two outputs), damaged in one way
// per row, and every command that reads state run on it with the real
// binary. Each (damage, command) pair must either fail with an error that
// names the state file, or do exactly what it does on the undamaged file
// (a flip in a free page, say). Anything else is a silent acceptance and
// fails the test. `go test -run TestDamageTable -v` prints the table.

const damageConfig = `
variable "v" {
  default = "%s"
}
resource "sparkform_data" "x" {
  count = 30
  input = "value ${count.index} ${var.v} of a state that spans several bbolt pages, like the seed's sparkform_data"
}
resource "sparkform_data" "y" {
  input = sparkform_data.x[0].output
}
output "first" {
  value = sparkform_data.x[0].output
}
output "y" {
  value = sparkform_data.y.output
}
`

var damageCommands = []struct {
	name string
	args []string
}{
	{"plan", []string{"plan", "-detailed-exitcode"}},
	{"apply", []string{"apply", "-auto-approve"}},
	{"refresh", []string{"apply", "-refresh-only", "-auto-approve"}},
	{"destroy", []string{"destroy", "-auto-approve"}},
	{"show", []string{"show"}},
	{"show-json", []string{"show", "-json"}},
	{"state-list", []string{"state", "list"}},
	{"state-show", []string{"state", "show", "sparkform_data.x[3]"}},
	{"state-pull", []string{"state", "pull"}},
	{"output", []string{"output"}},
}

type damageKind struct {
	name string
	// file changes the state file's bytes; nil when do is set.
	file func(b []byte) []byte
	// do damages the folder (.sparkform) some other way.
	do func(t *testing.T, dir string)
}

type runResult struct {
	code           int
	stdout, stderr string
	hung           bool
}

func runSparkform(dir string, args ...string) runResult {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "sparkform"), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+filepath.Join(dir, "home"), "NO_COLOR=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := runResult{stdout: out.String(), stderr: errb.String()}
	if ctx.Err() != nil {
		r.hung = true
	}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		r.code = -1
		r.stderr += err.Error()
	}
	return r
}

var durations = regexp.MustCompile(`[0-9]+(\.[0-9]+)?(ns|µs|ms|s|m)\b`)

// normalized is a command's output without what differs run to run:
// durations, and the order of lines (instances finish in any order).
func normalized(r runResult) string {
	lines := strings.Split(durations.ReplaceAllString(r.stdout+"\n--\n"+r.stderr, "D"), "\n")
	sort.Strings(lines)
	return fmt.Sprintf("%d\n%s", r.code, strings.Join(lines, "\n"))
}

func classify(base, got runResult) string {
	switch {
	case got.hung:
		return "HANG"
	case strings.Contains(got.stderr, "goroutine ") || strings.Contains(got.stderr, "panic:"):
		return "CRASH"
	case normalized(got) == normalized(base):
		return "harmless"
	case got.code != 0 && strings.Contains(got.stderr, ".sparkform/state.db"):
		return "refused"
	case got.code != 0:
		return "UNCLEAR"
	}
	return "SILENT"
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	out, err := exec.Command("cp", "-a", from+"/.", to).CombinedOutput()
	if err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
}

func TestDamageTable(t *testing.T) {
	good := t.TempDir()
	os.MkdirAll(filepath.Join(good, "home"), 0o700)
	cfg := filepath.Join(good, "main.sf.hcl")
	os.WriteFile(cfg, []byte(fmt.Sprintf(damageConfig, "one")), 0o644)
	if r := runSparkform(good, "apply", "-auto-approve"); r.code != 0 {
		t.Fatalf("first apply: %+v", r)
	}
	statePath := filepath.Join(good, ".sparkform", "state.db")
	older, err := os.ReadFile(statePath)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(cfg, []byte(fmt.Sprintf(damageConfig, "two")), 0o644)
	if r := runSparkform(good, "apply", "-auto-approve"); r.code != 0 {
		t.Fatalf("second apply: %+v", r)
	}
	state, err := os.ReadFile(statePath)
	if err != nil {
		t.Fatal(err)
	}
	kinds := damageKinds(t, state, older)
	if len(kinds) < 100 {
		t.Fatalf("only %d damage kinds", len(kinds))
	}

	// Baselines: every command on an undamaged copy.
	base := map[string]runResult{}
	for _, c := range damageCommands {
		dir := t.TempDir()
		copyTree(t, good, dir)
		r := runSparkform(dir, c.args...)
		if r.code != 0 || r.hung {
			t.Fatalf("%s on the undamaged state: %+v", c.name, r)
		}
		base[c.name] = r
	}

	type cell struct {
		k, c    int
		verdict string
		res     runResult
	}
	cells := make([][]cell, len(kinds))
	for i := range cells {
		cells[i] = make([]cell, len(damageCommands))
	}
	type job struct{ k, c int }
	jobs := make(chan job)
	var elapsed atomic.Int64
	perCmd := make([]atomic.Int64, len(damageCommands))
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				dir, err := os.MkdirTemp("", "damage-")
				if err != nil {
					t.Error(err)
					continue
				}
				copyTree(t, good, dir)
				k := kinds[j.k]
				sp := filepath.Join(dir, ".sparkform", "state.db")
				if k.file != nil {
					os.WriteFile(sp, k.file(bytes.Clone(state)), 0o600)
				} else {
					k.do(t, dir)
				}
				c := damageCommands[j.c]
				start := time.Now()
				r := runSparkform(dir, c.args...)
				elapsed.Add(int64(time.Since(start)))
				perCmd[j.c].Add(int64(time.Since(start)))
				cells[j.k][j.c] = cell{j.k, j.c, classify(base[c.name], r), r}
				os.Chmod(filepath.Join(dir, ".sparkform"), 0o700)
				os.RemoveAll(dir)
			}
		}()
	}
	for k := range kinds {
		for c := range damageCommands {
			jobs <- job{k, c}
		}
	}
	close(jobs)
	wg.Wait()

	// The table.
	var b strings.Builder
	fmt.Fprintf(&b, "%-46s", "damage \\ command")
	for _, c := range damageCommands {
		fmt.Fprintf(&b, " %-10s", c.name)
	}
	b.WriteString("\n")
	counts := map[string]int{}
	for i, k := range kinds {
		fmt.Fprintf(&b, "%-46s", k.name)
		for _, c := range cells[i] {
			fmt.Fprintf(&b, " %-10s", c.verdict)
			counts[c.verdict]++
		}
		b.WriteString("\n")
	}
	t.Logf("damage table: %d kinds x %d commands\n%s", len(kinds), len(damageCommands), b.String())
	t.Logf("totals: %v; command time %v", counts, time.Duration(elapsed.Load()))
	for i, c := range damageCommands {
		t.Logf("%s: %v", c.name, time.Duration(perCmd[i].Load()))
	}
	for i, k := range kinds {
		for _, c := range cells[i] {
			if c.verdict != "refused" && c.verdict != "harmless" {
				t.Errorf("%s / %s: %s (exit %d)\nstdout: %.600s\nstderr: %.600s", k.name, damageCommands[c.c].name, c.verdict, c.res.code, c.res.stdout, c.res.stderr)
			}
		}
	}
	// A refusal says what to do, not only that something is wrong.
	for i, k := range kinds {
		for _, c := range cells[i] {
			if c.verdict == "refused" && !strings.Contains(c.res.stderr, "restore") && !strings.Contains(c.res.stderr, "remove") {
				t.Errorf("%s / %s: the error says nothing to do: %s", k.name, damageCommands[c.c].name, c.res.stderr)
			}
		}
	}
}

// located is a record: its bucket, key and value. In a leaf page the
// value follows the key, so key+value is found in the file by its bytes
// (bbolt hands out inline buckets' records from copies, not the mapping);
// a damage kind changes every copy, the live one among them.
type located struct {
	bucket     string
	key, value []byte
}

// locate finds every key and value of every bucket in the file, and the
// page types, by reading it with bbolt and taking each slice's offset in
// bbolt's mapping.
func locate(t *testing.T, state []byte) (recs []located, pages map[uint64]string, pageSize int) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.db")
	os.WriteFile(p, state, 0o600)
	db, err := bolt.Open(p, 0o600, nil) // read-write: a read-only bbolt loads no freelist
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pageSize = db.Info().PageSize
	pages = map[uint64]string{}
	err = db.View(func(tx *bolt.Tx) error {
		for id := 0; id < int(tx.Size())/pageSize; id++ {
			if pi, err := tx.Page(id); err == nil && pi != nil {
				pages[uint64(id)] = pi.Type
			}
		}
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				if v != nil {
					recs = append(recs, located{string(name), bytes.Clone(k), bytes.Clone(v)})
				}
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return recs, pages, pageSize
}

// flipIn flips bit mask of byte at of every copy of pat in the file.
func flipIn(pat []byte, at int, mask byte) func([]byte) []byte {
	return func(b []byte) []byte {
		for i := 0; ; {
			j := bytes.Index(b[i:], pat)
			if j < 0 {
				return b
			}
			b[i+j+at] ^= mask
			i += j + len(pat)
		}
	}
}

func flipAt(off int, mask byte) func([]byte) []byte {
	return func(b []byte) []byte {
		b[off] ^= mask
		return b
	}
}

func damageKinds(t *testing.T, state, older []byte) []damageKind {
	recs, pages, ps := locate(t, state)
	var kinds []damageKind
	add := func(name string, f func([]byte) []byte) { kinds = append(kinds, damageKind{name: name, file: f}) }
	addDo := func(name string, f func(t *testing.T, dir string)) {
		kinds = append(kinds, damageKind{name: name, do: f})
	}
	n := len(state)

	// The file as a whole.
	for _, size := range []int{0, 100, ps, 2 * ps, 4 * ps, n / 2, n - ps, n - 1} {
		add(fmt.Sprintf("truncated to %d bytes", size), func(b []byte) []byte { return b[:size] })
	}
	add("4 KiB of garbage appended", func(b []byte) []byte { return append(b, bytes.Repeat([]byte{0xA5}, 4096)...) })
	add("older copy (the first apply's)", func([]byte) []byte { return bytes.Clone(older) })
	addDo("a directory in its place", func(t *testing.T, dir string) {
		sp := filepath.Join(dir, ".sparkform", "state.db")
		os.Remove(sp)
		os.Mkdir(sp, 0o700)
	})
	addDo("a FIFO in its place", func(t *testing.T, dir string) {
		sp := filepath.Join(dir, ".sparkform", "state.db")
		os.Remove(sp)
		syscall.Mkfifo(sp, 0o600)
	})
	addDo("a dangling symlink in its place", func(t *testing.T, dir string) {
		sp := filepath.Join(dir, ".sparkform", "state.db")
		os.Remove(sp)
		os.Symlink("nowhere.db", sp)
	})
	addDo("mode 0000 (harmless as root)", func(t *testing.T, dir string) {
		os.Chmod(filepath.Join(dir, ".sparkform", "state.db"), 0)
	})
	addDo("mode 0644", func(t *testing.T, dir string) {
		os.Chmod(filepath.Join(dir, ".sparkform", "state.db"), 0o644)
	})
	addDo("commit record garbage", func(t *testing.T, dir string) {
		os.WriteFile(filepath.Join(dir, ".sparkform", "state.db.commit"), []byte("garbage\n"), 0o600)
	})

	// The meta pages: every field of each, then whole pages.
	tx0 := binary.LittleEndian.Uint64(state[16+48:])
	tx1 := binary.LittleEndian.Uint64(state[ps+16+48:])
	newest, oldest := 0, ps
	if tx1 > tx0 {
		newest, oldest = ps, 0
	}
	for _, m := range []struct {
		name string
		off  int
	}{{"newest", newest}, {"older", oldest}} {
		for _, f := range []struct {
			name string
			off  int
		}{{"page flags", 8}, {"magic", 16}, {"version", 20}, {"page size", 24 + 1}, {"root", 32}, {"freelist", 48}, {"high-water mark", 56}, {"txid", 64}, {"checksum", 72}} {
			add(fmt.Sprintf("%s meta: %s flipped", m.name, f.name), flipAt(m.off+f.off, 0x01))
		}
		add(m.name+" meta page zeroed", func(b []byte) []byte { clear(b[m.off : m.off+ps]); return b })
	}
	add("older meta copied over the newest", func(b []byte) []byte { copy(b[newest:newest+ps], b[oldest:oldest+ps]); return b })
	add("newest meta copied over the older", func(b []byte) []byte { copy(b[oldest:oldest+ps], b[newest:newest+ps]); return b })

	// Pages: zeroed, their headers flipped, two swapped.
	var inUse, free []uint64
	for id, typ := range pages {
		switch typ {
		case "branch", "leaf", "freelist":
			inUse = append(inUse, id)
		case "free":
			free = append(free, id)
		}
	}
	slices.Sort(inUse)
	slices.Sort(free)
	for _, id := range inUse[:min(len(inUse), 10)] {
		off := int(id) * ps
		add(fmt.Sprintf("%s page %d zeroed", pages[id], id), func(b []byte) []byte { clear(b[off : off+ps]); return b })
		add(fmt.Sprintf("%s page %d: count flipped", pages[id], id), flipAt(off+10, 0x02))
	}
	for i, id := range inUse[:min(len(inUse), 6)] {
		off := int(id) * ps
		add(fmt.Sprintf("%s page %d: type flipped", pages[id], id), flipAt(off+8, 0x03))
		add(fmt.Sprintf("%s page %d: overflow set", pages[id], id), flipAt(off+12, 0x01))
		if i+1 < len(inUse) {
			o2 := int(inUse[i+1]) * ps
			add(fmt.Sprintf("pages %d and %d swapped", id, inUse[i+1]), func(b []byte) []byte {
				tmp := bytes.Clone(b[off : off+ps])
				copy(b[off:off+ps], b[o2:o2+ps])
				copy(b[o2:o2+ps], tmp)
				return b
			})
		}
	}
	for _, id := range free[:min(len(free), 4)] {
		off := int(id) * ps
		add(fmt.Sprintf("free page %d: byte flipped", id), flipAt(off+ps/2, 0x10))
		add(fmt.Sprintf("free page %d zeroed", id), func(b []byte) []byte { clear(b[off : off+ps]); return b })
	}

	// Records: keys and values of every bucket.
	seen := map[string]int{}
	for _, r := range recs {
		if seen[r.bucket] >= 3 && r.bucket != "meta" {
			continue
		}
		pat := append(bytes.Clone(r.key), r.value...)
		if !bytes.Contains(state, pat) {
			t.Fatalf("%s/%q is not in the file as key and value", r.bucket, r.key)
		}
		seen[r.bucket]++
		name := fmt.Sprintf("%s/%q", r.bucket, r.key)
		switch {
		case r.bucket == "interned" && len(r.key) == 8:
			name = fmt.Sprintf("interned/%d", binary.BigEndian.Uint64(r.key))
		case r.bucket == "history":
			name = fmt.Sprintf("history/%q@%d", r.key[:len(r.key)-9], binary.BigEndian.Uint64(r.key[len(r.key)-8:]))
		}
		if len(name) > 34 {
			name = name[:34]
		}
		k := len(r.key)
		if len(r.value) > 0 {
			add(name+" value[0]", flipIn(pat, k, 0x01))
			if len(r.value) > 2 {
				add(name+" value[mid]", flipIn(pat, k+len(r.value)/2, 0x20))
			}
			add(name+" value[end]", flipIn(pat, k+len(r.value)-1, 0x04))
		}
		add(name+" key", flipIn(pat, k-1, 0x01))
	}
	// Random garbage in pages in use (fixed seed: the same table each run).
	rng := rand.New(rand.NewSource(31))
	for i := range 8 {
		id := inUse[rng.Intn(len(inUse))]
		off := int(id)*ps + rng.Intn(ps-16)
		garbage := make([]byte, 16)
		rng.Read(garbage)
		add(fmt.Sprintf("random 16 bytes #%d in page %d", i, id), func(b []byte) []byte { copy(b[off:], garbage); return b })
	}
	return kinds
}
