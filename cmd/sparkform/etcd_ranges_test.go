package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/internal/etcdtest"
	"github.com/sparkform/sparkform/internal/realpart"
)

// A no-op plan against etcd reads the state in a constant number of range
// requests, whatever the number of instances: counted by the cluster
// itself (etcd_debugging_mvcc_range_total, summed over the members, which
// also counts the reads behind transaction conditions) around a real
// `sparkform plan` process, for 20 and for 400 instances (the fewest of
// three plans each).
func TestEtcdNoopPlanRangeRequests(t *testing.T) {
	_, err := etcdtest.Binary()
	realpart.Need(t, "etcd (apt-get install etcd-server)", err)
	c, err := etcdtest.Start(etcdtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	bin := filepath.Join(binDir, "sparkform")
	ranges := map[int]float64{}
	for _, n := range []int{20, 400} {
		dir := t.TempDir()
		cfg := fmt.Sprintf(`sparkform {
  backend "etcd" {
    endpoints = ["%s"]
    prefix    = "ranges/%d"
  }
}
node "local" {
  transport = "local"
}
resource "sparkform_data" "r" {
  count = %d
  node  = node.local
  input = "seed-${count.index}"
}
`, strings.Join(c.Endpoints(), `", "`), n, n)
		if err := os.WriteFile(filepath.Join(dir, "main.sf.hcl"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		run := func(args ...string) string {
			cmd := exec.Command(bin, args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "NO_COLOR=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("sparkform %v: %v\n%s", args, err, out)
			}
			return string(out)
		}
		run("apply", "-auto-approve")
		// The counter is the cluster's: a range of its own (a lease or
		// compaction check) can land inside a slow plan's window. The
		// fewest of three plans is what the plan itself asked for; a
		// count that grows with N grows in every one of them.
		for i := 0; i < 3; i++ {
			before, err := c.RangeTotal()
			if err != nil {
				t.Fatal(err)
			}
			if out := run("plan", "-detailed-exitcode"); !strings.Contains(out, "No changes") {
				t.Fatalf("plan after apply is not a no-op:\n%s", out)
			}
			after, err := c.RangeTotal()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("N=%d, plan %d: %v range requests", n, i+1, after-before)
			if got, ok := ranges[n]; !ok || after-before < got {
				ranges[n] = after - before
			}
		}
	}
	if ranges[20] != ranges[400] {
		t.Errorf("range requests of a no-op plan grow with N: %v for 20 instances, %v for 400", ranges[20], ranges[400])
	}
	if ranges[400] > 16 || ranges[400] < 3 {
		t.Errorf("a no-op plan made %v range requests; want a small constant (meta, resources, journal, lock)", ranges[400])
	}
}
