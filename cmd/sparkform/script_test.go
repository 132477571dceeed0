package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/sparkform/sparkform/internal/kernelsim"
	"github.com/sparkform/sparkform/internal/testbed"
	"github.com/sparkform/sparkform/internal/tfjsoncheck"
)

// binDir holds the sparkform binary, built once by TestMain (with -tags
// kmodsim, so kmod can drive simulated kernels): script tests run it as
// users do, and it starts its providers as real plugin processes by
// re-executing itself.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sparkform-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// A test build: its kmod provider drives the simulated kernels that the
	// kernelsim command names (see kmodsim.go).
	out, err := exec.Command("go", "build", "-tags", "kmodsim", "-o", filepath.Join(dir, "sparkform"), ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building sparkform: %v\n%s", err, out)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", binDir+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("SPARKFORM_BIN", filepath.Join(binDir, "sparkform"))
			env.Setenv("NO_COLOR", "1")
			// The repository's examples, for scripts that check them.
			ex, err := filepath.Abs("../../examples")
			if err != nil {
				return err
			}
			env.Setenv("SF_EXAMPLES", ex)
			// Files scripts copy in (e.g. a state written by an older format).
			fx, err := filepath.Abs("testdata/fixtures")
			if err != nil {
				return err
			}
			env.Setenv("SF_FIXTURES", fx)
			return os.MkdirAll(filepath.Join(env.WorkDir, "home"), 0o700)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"sshnodes":     cmdSSHNodes,
			"mkrepo":       cmdMkRepo,
			"waitfile":     cmdWaitFile,
			"exitcode":     cmdExitCode,
			"writefile":    cmdWriteFile,
			"mkhub":        cmdMkHub,
			"kernelsim":    cmdKernelSim,
			"etcd":         cmdEtcd,
			"etcdstop":     cmdEtcdStop,
			"etcdstart":    cmdEtcdStart,
			"etcdhealthy":  cmdEtcdHealthy,
			"sshjumps":     cmdSSHJumps,
			"sshkill":      cmdSSHKill,
			"sshrevive":    cmdSSHRevive,
			"sshlogins":    cmdSSHLogins,
			"envsubst":     cmdEnvSubst,
			"jsonstream":   cmdJSONStream,
			"validatejson": cmdValidateJSON,
			"envmatch":     cmdEnvMatch,
			"freeport":     cmdFreePort,
			"tfjson":       cmdTFJSON,
		},
	})
}

// tfjson plan|state|outputs FILE: read a document of show -json PLANFILE,
// show -json or output -json with terraform-json, the client tools
// written for Terraform use, and check it (internal/tfjsoncheck): it
// decodes, validates, every change is whole and no sensitive value is
// written.
func cmdTFJSON(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: tfjson plan|state|outputs FILE")
	}
	b, err := os.ReadFile(ts.MkAbs(args[1]))
	ts.Check(err)
	switch args[0] {
	case "plan":
		_, err = tfjsoncheck.Plan(b)
	case "state":
		_, err = tfjsoncheck.State(b)
	case "outputs":
		_, err = tfjsoncheck.Outputs(b)
	default:
		ts.Fatalf("tfjson: unknown document kind %q", args[0])
	}
	switch {
	case err != nil && !neg:
		ts.Fatalf("tfjson %s %s: %v", args[0], args[1], err)
	case err == nil && neg:
		ts.Fatalf("tfjson %s %s: the document passed", args[0], args[1])
	}
}

// freeport NAME...: set each NAME to a TCP port on 127.0.0.1 that was free
// a moment ago (the kernel picked it), for a server the script starts: a
// fixed port in the ephemeral range collides with some test's connection
// now and then on a loaded machine.
func cmdFreePort(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: freeport NAME...")
	}
	var held []net.Listener // all held until each has its own port
	for _, name := range args {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			ts.Fatalf("freeport: %v", err)
		}
		held = append(held, ln)
		ts.Setenv(name, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	}
	for _, ln := range held {
		ln.Close()
	}
}

// sshnodes N: start N real sshd nodes and export their SF_* variables.
func cmdSSHNodes(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: sshnodes N")
	}
	n, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("sshnodes: %v", err)
	}
	if err := testbed.Available(); err != nil {
		ts.Fatalf("sshd test bed unavailable: %v (install openssh-server; .ci/run does)", err)
	}
	bed, err := testbed.Start("", n)
	if err != nil {
		ts.Fatalf("sshnodes: %v", err)
	}
	ts.Defer(func() { bed.Stop() })
	beds.Store(ts.Getenv("WORK"), bed)
	for k, v := range bed.Env() {
		ts.Setenv(k, v)
	}
}

// sshlogins: print, per node of the script's bed, how many SSH logins its
// sshd accepted since the previous sshlogins (or the bed's start), as
// "node0=N node1=M": each is one handshake, one connection.
func cmdSSHLogins(ts *testscript.TestScript, neg bool, args []string) {
	v, ok := beds.Load(ts.Getenv("WORK"))
	if !ok {
		ts.Fatalf("no bed: run sshnodes or sshjumps first")
	}
	var out []string
	for _, n := range v.(*testbed.Bed).Nodes {
		key := ts.Getenv("WORK") + "/" + n.Name
		total := strings.Count(n.Log(), "Accepted publickey for ")
		prev, _ := loginsSeen.Load(key)
		p, _ := prev.(int)
		loginsSeen.Store(key, total)
		out = append(out, fmt.Sprintf("%s=%d", n.Name, total-p))
	}
	fmt.Fprintln(ts.Stdout(), strings.Join(out, " "))
}

// loginsSeen is each node's login count at the last sshlogins.
var loginsSeen sync.Map

// beds are the running beds by script work directory, for sshkill and
// sshrevive.
var beds sync.Map

// sshjumps J N: start N real sshd nodes reachable only through a chain of
// J jump hosts (network namespaces) and export their SF_* variables,
// SF_JUMPi_HOST and SF_JUMPi_PORT included.
func cmdSSHJumps(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: sshjumps J N")
	}
	j, err1 := strconv.Atoi(args[0])
	n, err2 := strconv.Atoi(args[1])
	if err1 != nil || err2 != nil {
		ts.Fatalf("sshjumps: J and N must be numbers")
	}
	if err := testbed.Available(); err != nil {
		ts.Fatalf("sshd test bed unavailable: %v (install openssh-server and iproute2; .ci/run does)", err)
	}
	bed, err := testbed.StartBehindJumps("", j, n)
	if err != nil {
		ts.Fatalf("sshjumps: %v", err)
	}
	ts.Defer(func() { bed.Stop() })
	beds.Store(ts.Getenv("WORK"), bed)
	for k, v := range bed.Env() {
		ts.Setenv(k, v)
	}
}

// sshkill I: stop node I's sshd (as a restart would).
func cmdSSHKill(ts *testscript.TestScript, neg bool, args []string) {
	ts.Check(bedNode(ts, args).Kill())
}

// sshrevive I DURATION: start node I's sshd again after DURATION, in the
// background (the next command meets a refusing node meanwhile).
// sshrevive I FILE REGEXP: start it again once FILE (written by a command
// that runs meanwhile) matches REGEXP, so a test of a retry does not
// depend on how fast a loaded machine gets to the first attempt.
func cmdSSHRevive(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 && len(args) != 3 {
		ts.Fatalf("usage: sshrevive I DURATION | sshrevive I FILE REGEXP")
	}
	n := bedNode(ts, args[:1])
	wait := func() error { return nil }
	if len(args) == 2 {
		d, err := time.ParseDuration(args[1])
		ts.Check(err)
		wait = func() error { time.Sleep(d); return nil }
	} else {
		file, re := ts.MkAbs(args[1]), regexp.MustCompile(args[2])
		wait = func() error {
			for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if b, err := os.ReadFile(file); err == nil && re.Match(b) {
					return nil
				}
			}
			return fmt.Errorf("%s did not match %q in 2m; reviving anyway", args[1], args[2])
		}
	}
	done := make(chan error, 1)
	go func() {
		werr := wait()
		done <- errors.Join(werr, n.Revive())
	}()
	ts.Defer(func() {
		if err := <-done; err != nil {
			ts.Logf("sshrevive: %v", err)
		}
	})
}

func bedNode(ts *testscript.TestScript, args []string) *testbed.Node {
	if len(args) != 1 {
		ts.Fatalf("usage: sshkill I")
	}
	v, ok := beds.Load(ts.Getenv("WORK"))
	if !ok {
		ts.Fatalf("no bed: run sshjumps first")
	}
	i, err := strconv.Atoi(args[0])
	ts.Check(err)
	return v.(*testbed.Bed).Nodes[i]
}

// envsubst FILE...: replace $NAME and ${NAME} in each file with the
// script's environment (e.g. an ssh_config naming the bed's addresses).
func cmdEnvSubst(ts *testscript.TestScript, neg bool, args []string) {
	for _, f := range args {
		b, err := os.ReadFile(ts.MkAbs(f))
		ts.Check(err)
		ts.Check(os.WriteFile(ts.MkAbs(f), []byte(os.Expand(string(b), ts.Getenv)), 0o600))
	}
}

// mkrepo NAME [MESSAGE]: create (or add a commit to) a git repository that
// the sshd test user can read, with a release/runtime/serving tree; export
// NAME_PATH and NAME_COMMIT (the new head).
func cmdMkRepo(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 {
		ts.Fatalf("usage: mkrepo NAME [MESSAGE]")
	}
	name := args[0]
	msg := "commit"
	if len(args) > 1 {
		msg = strings.Join(args[1:], " ")
	}
	dir := ts.Getenv(name + "_PATH")
	if dir == "" {
		d, err := os.MkdirTemp("", "sparkform-repo-")
		if err != nil {
			ts.Fatalf("%v", err)
		}
		ts.Defer(func() { os.RemoveAll(d) })
		if err := os.Chmod(d, 0o755); err != nil {
			ts.Fatalf("%v", err)
		}
		dir = filepath.Join(d, name)
		ts.Setenv(name+"_PATH", dir)
	}
	git := func(a ...string) string {
		cmd := exec.Command("git", append([]string{"-c", "safe.directory=*"}, a...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e",
			"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
		out, err := cmd.CombinedOutput()
		if err != nil {
			ts.Fatalf("git %v: %v\n%s", a, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			ts.Fatalf("%v", err)
		}
		git("init", "-q", "-b", "main")
	}
	files := map[string]string{
		"README.md":                          "kit\n",
		"release/runtime/serving/serve.py":   "print('serve " + msg + "')\n",
		"release/runtime/serving/guard.yaml": "memory: 9g\n",
		"release/runtime/aot/kernel.bin":     "aot " + msg + "\n",
	}
	for rel, content := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			ts.Fatalf("%v", err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			ts.Fatalf("%v", err)
		}
	}
	git("add", "-A")
	git("commit", "-q", "--allow-empty", "-m", msg)
	ts.Setenv(name+"_COMMIT", git("rev-parse", "HEAD"))
	// Repos for sshd nodes belong to the node user (git refuses to serve a
	// repository owned by someone else); local-node repos stay root's.
	if u, err := user.Lookup(testbed.User); err == nil && ts.Getenv("SF_NODE_USER") != "" {
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		_ = filepath.Walk(filepath.Dir(dir), func(p string, _ os.FileInfo, err error) error {
			if err == nil {
				_ = os.Lchown(p, uid, gid)
			}
			return nil
		})
	}
}

// waitfile PATH [SECONDS]: wait until PATH exists.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 {
		ts.Fatalf("usage: waitfile PATH [SECONDS]")
	}
	limit := 30 * time.Second
	if len(args) > 1 {
		s, _ := strconv.Atoi(args[1])
		limit = time.Duration(s) * time.Second
	}
	deadline := time.Now().Add(limit)
	for {
		if _, err := os.Stat(ts.MkAbs(args[0])); err == nil {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitfile: %s did not appear within %s", args[0], limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// exitcode N CMD ARGS...: run a program and require exit status N.
func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: exitcode N CMD [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: %v", err)
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	if err != nil {
		var ee *exec.ExitError
		if ok := asExit(err, &ee); ok {
			got = ee.ExitCode()
		} else {
			ts.Fatalf("exitcode: %v", err)
		}
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
	}
}

// writefile PATH CONTENT...: write a file (creating folders), e.g. to
// edit a file on a node by hand.
func cmdWriteFile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: writefile PATH CONTENT...")
	}
	p := ts.MkAbs(args[0])
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		ts.Fatalf("%v", err)
	}
	ts.Check(os.WriteFile(p, []byte(strings.Join(args[1:], " ")+"\n"), 0o644))
}

// mkhub REPO_ID REV FILE=CONTENT...: commit a snapshot to a Hugging Face
// hub cache readable by the sshd test user (exported as HUB_DIR; made on
// first use): blobs under the repo, the first file's blob in the hub-level
// shared store, snapshot symlinks, and refs/main pointing at REV (any
// label; its sha1-like hex form is exported as HUB_REV).
func cmdMkHub(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 3 {
		ts.Fatalf("usage: mkhub REPO_ID REV FILE=CONTENT...")
	}
	dir := ts.Getenv("HUB_DIR")
	if dir == "" {
		d, err := os.MkdirTemp("", "sparkform-hub-")
		if err != nil {
			ts.Fatalf("%v", err)
		}
		ts.Defer(func() { os.RemoveAll(d) })
		ts.Check(os.Chmod(d, 0o755))
		dir = filepath.Join(d, "hub")
		ts.Setenv("HUB_DIR", dir)
	}
	sum := sha256.Sum256([]byte(args[1]))
	rev := hex.EncodeToString(sum[:])[:40]
	rd := filepath.Join(dir, "models--"+strings.ReplaceAll(args[0], "/", "--"))
	for i, kv := range args[2:] {
		name, content, ok := strings.Cut(kv, "=")
		if !ok {
			ts.Fatalf("mkhub: %q is not FILE=CONTENT", kv)
		}
		h := sha256.Sum256([]byte(content))
		hash := hex.EncodeToString(h[:])
		blob := filepath.Join(rd, "blobs", hash)
		ts.Check(os.MkdirAll(filepath.Dir(blob), 0o755))
		if _, err := os.Lstat(blob); err != nil {
			if i == 0 {
				shared := filepath.Join(dir, "blobs", hash[:2], hash)
				ts.Check(os.MkdirAll(filepath.Dir(shared), 0o755))
				ts.Check(os.WriteFile(shared, []byte(content), 0o644))
				rel, _ := filepath.Rel(filepath.Dir(blob), shared)
				ts.Check(os.Symlink(rel, blob))
			} else {
				ts.Check(os.WriteFile(blob, []byte(content), 0o644))
			}
		}
		link := filepath.Join(rd, "snapshots", rev, name)
		ts.Check(os.MkdirAll(filepath.Dir(link), 0o755))
		rel, _ := filepath.Rel(filepath.Dir(link), blob)
		ts.Check(os.Symlink(rel, link))
	}
	ts.Check(os.MkdirAll(filepath.Join(rd, "refs"), 0o755))
	ts.Check(os.WriteFile(filepath.Join(rd, "refs", "main"), []byte(rev), 0o644))
	ts.Setenv("HUB_REV", rev)
}

// kernelsim KEY...: one simulated kernel (internal/kernelsim, the seed's
// catalogue: nvidia_drm loaded with modeset=N fbdev=N) per node key, found
// by the kmod provider through its {node} hook; exports KSIM_KEY (the
// simulator's root: sys/module/... holds what a node would show).
func cmdKernelSim(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 {
		ts.Fatalf("usage: kernelsim KEY...")
	}
	bin, err := kernelsim.Binary()
	if err != nil {
		ts.Fatalf("kernelsim: %v", err)
	}
	dir, err := os.MkdirTemp("", "sparkform-kernel-")
	if err != nil {
		ts.Fatalf("%v", err)
	}
	ts.Defer(func() { os.RemoveAll(dir) })
	ts.Check(os.Chmod(dir, 0o755))
	for _, key := range args {
		s, err := kernelsim.Create(filepath.Join(dir, key), kernelsim.SeedCatalog, bin)
		if err != nil {
			ts.Fatalf("kernelsim: %v", err)
		}
		ts.Setenv("KSIM_"+strings.ReplaceAll(key, "-", "_"), s.Root)
	}
	ts.Setenv("SPARKFORM_KMOD_SYSFS_ROOT", filepath.Join(dir, "{node}", "sys"))
	ts.Setenv("SPARKFORM_KMOD_MODPROBE", filepath.Join(dir, "{node}", "bin", "modprobe"))
	ts.Setenv("SPARKFORM_KMOD_RMMOD", filepath.Join(dir, "{node}", "bin", "rmmod"))
}
