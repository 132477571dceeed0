package gitkit_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sparkform/sparkform/internal/nodehelper/helpertest"
	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/internal/testbed"
	"github.com/sparkform/sparkform/providers/gitkit"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// TestReadNodeHelper reads a checkout on an sshd node with the node helper
// installed (helpertest.Install) and without it (SPARKFORM_NODE_HELPER=-):
// both see the applied digest in one round trip, the same digest after an
// edit on the node, the same error for a folder the user may not read and
// the same digest for it through sudo (two round trips), and the same
// digest for a name with a newline (read.sh answers). With the helper, a
// read starts one process on the node (the session's shell execs the
// helper) where the script starts three (find, sha256sum --tag for the
// executables and sha256sum for the other files).
func TestReadNodeHelper(t *testing.T) {
	fx := newFixture(t, t.TempDir())
	bn := testbed.StartT(t, 1).Nodes[0]
	plain := bn.SDK()
	become := plain
	become.Become = true

	type seen struct {
		step, digest string
		trips        int
	}
	results := map[string][]seen{}
	for _, mode := range []string{"script", "helper"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "helper" {
				helpertest.Install(t, plain, become)
			} else {
				t.Setenv(node.HelperEnv, "-")
			}
			pool := node.NewPool()
			defer pool.Close()
			p := gitkit.NewWithPool(pool)
			path := filepath.Join(bn.Root, "helper-"+mode, "kit")
			in := newInstance(t, p, plain, "gitkit_checkout.kit")
			in.converge(config(fx.url, fx.c1, "release/runtime", path))
			applied := digestOf(in.state)
			var got []seen
			read := func(step string, wantTrips int) {
				t.Helper()
				rr := in.refresh()
				if rr.RoundTrips != wantTrips {
					t.Errorf("%s: %d round trips, want %d", step, rr.RoundTrips, wantTrips)
				}
				got = append(got, seen{step, digestOf(in.state), rr.RoundTrips})
			}

			read("no-op", 1)
			if d := digestOf(in.state); d != applied {
				t.Errorf("no-op read: digest %s, want the applied %s", d, applied)
			}

			writeFile(t, filepath.Join(path, "serving/conservative.yaml"), "max_num_seqs: 8\n", 0o644)
			writeFile(t, filepath.Join(path, "serving/new.sh"), "#!/bin/sh\n", 0o755)
			read("drift", 1)
			drifted := digestOf(in.state)
			if drifted == applied {
				t.Errorf("an edited tree kept the digest %s", applied)
			}

			// A folder only root may read: the user's read fails (read.sh
			// says why), a become node's read takes sudo.
			serving := filepath.Join(path, "serving")
			if err := os.Chown(serving, 0, 0); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(serving, 0o700); err != nil {
				t.Fatal(err)
			}
			rr := p.ReadResources(context.Background(), sdk.ReadRequest{Node: plain, Resources: []sdk.ReadItem{{
				TypeName: gitkit.TypeCheckout, Address: in.addr, Prior: in.state, Private: in.priv}}})
			var msg string
			if !rr.Diagnostics.HasErrors() && len(rr.Results) == 1 && rr.Results[0].Diagnostics.HasErrors() {
				msg = rr.Results[0].Diagnostics.Err().Error()
			}
			if !strings.Contains(msg, "Permission denied") || rr.RoundTrips != 2 {
				t.Errorf("read of an unreadable folder as the user: %d round trips, %q; want 2 and read.sh's permission error", rr.RoundTrips, msg)
			}
			got = append(got, seen{"unreadable", strings.ReplaceAll(msg, path, "PATH"), rr.RoundTrips})
			in.node = become
			read("through sudo", 2)
			if d := digestOf(in.state); d != drifted {
				t.Errorf("read through sudo: digest %s, want %s", d, drifted)
			}
			in.node = plain
			if err := os.Chmod(serving, 0o755); err != nil {
				t.Fatal(err)
			}

			// A newline in a name: read.sh answers.
			odd := filepath.Join(path, "serving/one\ntwo")
			writeFile(t, odd, "x", 0o644)
			read("newline", 2)
			if d := digestOf(in.state); d == drifted {
				t.Errorf("a new file left the digest %s", d)
			}
			if err := os.Remove(odd); err != nil {
				t.Fatal(err)
			}

			// What one read starts on the node, over a new connection.
			pool.Close()
			procs := traceRead(t, bn, plain, in)
			t.Logf("%s: one read started %d process(es): %s", mode, len(procs), procs.Programs())
			find, sum, helper := procs.Count("find"), procs.Count("sha256sum"), 0
			for _, p := range procs {
				if strings.HasPrefix(p.Program(), "sparkform-node-") {
					helper++
				}
			}
			want := [3]int{1, 2, 0} // sha256sum --tag for the executables, sha256sum for the rest
			if mode == "helper" {
				want = [3]int{0, 0, 1}
			}
			if got := [3]int{find, sum, helper}; got != want {
				t.Errorf("one read ran find, sha256sum, the helper %v times; want %v", got, want)
			}
			if mode == "helper" && len(procs) != 1 {
				t.Errorf("one read with the helper started %d processes (%s), want 1", len(procs), procs.Programs())
			}
			results[mode] = got
		})
	}
	if a, b := results["script"], results["helper"]; len(a) > 0 && len(b) > 0 && !reflect.DeepEqual(a, b) {
		t.Errorf("reads differ:\nscript %+v\nhelper %+v", a, b)
	}
}

// traceRead reads in's checkout once through a new connection to bn as n
// and returns the processes the read's command started on the node (its
// session's, below the node's sshd processes).
func traceRead(t *testing.T, bn *testbed.Node, n sdk.Node, in *instance) testbed.Procs {
	t.Helper()
	if !bn.WaitIdle(10 * time.Second) {
		t.Fatal("a connection to the node is still open")
	}
	tr, err := bn.Trace()
	realpart.Need(t, "strace", err)
	pool := node.NewPool()
	p := gitkit.NewWithPool(pool)
	rr := p.ReadResources(context.Background(), sdk.ReadRequest{Node: n, Resources: []sdk.ReadItem{{
		TypeName: gitkit.TypeCheckout, Address: in.addr, Prior: in.state, Private: in.priv}}})
	pool.Close()
	ps, err := tr.Stop(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if rr.Diagnostics.HasErrors() || rr.RoundTrips != 1 {
		t.Fatalf("traced read: %d round trips, %v", rr.RoundTrips, rr.Diagnostics.Err())
	}
	isSSHD := func(p testbed.Proc) bool { return ps.Effective(p) == "sshd" }
	var out testbed.Procs
	for _, p := range ps {
		if isSSHD(p) {
			continue
		}
		root, ok := ps.Root(p, isSSHD)
		if ok && len(root.Execs) > 0 && strings.Contains(strings.Join(root.Execs[0], " "), "walk") {
			out = append(out, p)
		}
	}
	if testing.Verbose() {
		for _, p := range ps {
			for _, a := range p.Execs {
				line := strings.Join(a, " ")
				if len(line) > 120 {
					line = line[:120] + "..."
				}
				t.Logf("pid %d (parent %d): %q", p.Pid, p.Parent, line)
			}
		}
	}
	return out
}
