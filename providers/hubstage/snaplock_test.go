package hubstage

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

// TestReceiverGoesWithItsConnection: a receiver still waiting for the
// node's snapshot lock (another snapshot's record work holds it) when its
// connection drops (sparkform killed before its transfer began; sshd
// sends no signal to a command without a tty) stops within a second,
// instead of taking the lock later and working on for nobody. make torture
// found one still running a second after the kill. The client here is
// OpenSSH's ssh, killed with SIGKILL, on a real sshd node.
func TestReceiverGoesWithItsConnection(t *testing.T) {
	var sn *snapNode
	for _, n := range snapNodes(t) {
		if n.node.Transport == "ssh" {
			sn = &n
		}
	}
	if sn == nil {
		realpart.Missing(t, "the sshd node of the test bed")
	}
	ssh, err := exec.LookPath("ssh")
	must(t, err)
	flock, err := exec.LookPath("flock")
	must(t, err)

	// Another holder of the node's snapshot lock (an flock on "/").
	holder := exec.Command(flock, "/", "sleep", "30")
	must(t, holder.Start())
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	time.Sleep(200 * time.Millisecond) // the holder has the lock

	tag := make([]byte, 8)
	rand.Read(tag)
	owner := "test-owner-" + hex.EncodeToString(tag)
	s := &snapSpec{HubDir: sn.hub, RepoID: "acme/held-lock", RepoType: "model", Parallel: 1}
	r := &snapshot{recDir: sn.recs}
	argv := r.receiverArgv(s, strings.Repeat("a", 40), "prep", owner)
	n := sn.node
	cmd := exec.Command(ssh, "-T", "-i", n.IdentityFile, "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
		"-o", "UserKnownHostsFile="+n.KnownHosts, "-o", "StrictHostKeyChecking=yes",
		"-p", strconv.Itoa(n.Port), n.User+"@"+n.Host, node.QuoteArgv(argv))
	in, err := cmd.StdinPipe()
	must(t, err)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// The secret line and an empty job list; stdin stays open, as
	// sparkform's does until the receiver ends.
	_, err = io.WriteString(in, "\nEND\n")
	must(t, err)
	running := func() bool { return exec.Command("pgrep", "-f", owner).Run() == nil }
	deadline := time.Now().Add(10 * time.Second)
	for !running() {
		if time.Now().After(deadline) {
			t.Fatalf("the receiver did not start waiting for the lock: running %v, output %q", running(), out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // at the lock (nothing else takes that long)

	must(t, cmd.Process.Kill()) // sparkform killed: its connection is gone
	cmd.Wait()
	time.Sleep(1500 * time.Millisecond)
	if running() {
		pids, _ := exec.Command("pgrep", "-f", owner).Output()
		t.Fatalf("the receiver still runs 1.5 s after its connection went, waiting for the lock (pids %s)", strings.Fields(string(pids)))
	}
}

// TestSnapshotRecordAloneIsNotGone: a destroy killed after it removed the
// snapshot's links and blobs but before its restore record (make torture,
// seed 640260010: a plugin killed mid-destroy) leaves only the record. The
// refresh must not call that gone (state would drop the object and the
// record stay on the node for ever): the object stays, and the destroy
// run again removes the record.
func TestSnapshotRecordAloneIsNotGone(t *testing.T) {
	n := snapNodes(t)[0]
	c := newSnapCase(t, n)
	cfg := c.config(t, nil)
	state, priv := c.apply(t, cty.NilVal, nil, cfg)
	records := func() []string {
		rs, err := filepath.Glob(filepath.Join(n.recs, "restore", snapRecordKind, "*"))
		must(t, err)
		return rs
	}
	if len(records()) == 0 {
		t.Fatal("no restore record after the apply")
	}
	// What the killed destroy left: the repo folder gone, the record there.
	must(t, os.RemoveAll(filepath.Join(n.hub, c.repo.CacheDirName())))

	read := sdktest.Read(t, c.p, TypeSnapshot, n.node, state, priv)
	if read.NewState.IsNull() {
		t.Fatalf("refresh calls the snapshot gone while its restore record is on the node: %v", records())
	}
	sdktest.Destroy(t, c.p, TypeSnapshot, n.node, read.NewState, read.Private)
	if rs := records(); len(rs) != 0 {
		t.Fatalf("restore record left after the destroy: %v", rs)
	}
	// With no record either, it is gone.
	if again := sdktest.Read(t, c.p, TypeSnapshot, n.node, state, priv); !again.NewState.IsNull() {
		t.Errorf("refresh after the destroy: %#v, want null", again.NewState)
	}
}
