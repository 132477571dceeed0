package state

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The test binary re-executes itself as a second process (a real writer in
// another process) when STATE_TEST_CHILD names a mode.
func TestMain(m *testing.M) {
	if mode := os.Getenv("STATE_TEST_CHILD"); mode != "" {
		os.Exit(childMain(mode, os.Getenv("STATE_TEST_PATH")))
	}
	os.Exit(m.Run())
}

// childMain modes:
//
//	hold:  take the lock, print "locked", then per stdin line "put ADDR"
//	       write a resource and print "ok" or "err: ..."; release at EOF.
//	hold-for: take the lock, print "locked", hold STATE_TEST_HOLD, release.
//	apply: take the lock, print "locked", then loop like an apply
//	       (intent, put, clear intent) every few ms until stdin EOF.
//	crash: take the lock, put a resource and an intent for it, print
//	       "intent", then wait to be killed.
//	complete-then-intent: intent for a.x, Complete(a.x) (deferred), intent
//	       for a.y; print "intent a.y", then wait to be killed.
//	complete-lost: intent for a.x, then Complete(a.x) with the commit loop
//	       stopped before committing it; print "paused", wait to be killed.
func childMain(mode, path string) int {
	if mode == "complete-lost" {
		paused := make(chan struct{})
		faultBeforeCommit = func(addrs []string) {
			if slices.Contains(addrs, "a.x") {
				close(paused)
				select {} // killed with the Complete queued, not committed
			}
		}
		defer func() { <-paused; fmt.Println("paused"); select {} }()
	}
	s, err := Open(path, Options{LockTimeout: 10 * time.Second, Command: "child " + mode})
	if err != nil {
		fmt.Println("open:", err)
		return 1
	}
	fmt.Println("locked")
	switch mode {
	case "hold":
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if addr, ok := strings.CutPrefix(sc.Text(), "put "); ok {
				if err := s.PutResource(testResource(addr, "from child")); err != nil {
					fmt.Println("err:", err)
				} else {
					fmt.Println("ok")
				}
			}
		}
	case "hold-for":
		d, _ := time.ParseDuration(os.Getenv("STATE_TEST_HOLD"))
		time.Sleep(d)
	case "apply":
		stop := make(chan struct{})
		go func() { io.Copy(io.Discard, os.Stdin); close(stop) }()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return closeChild(s)
			default:
			}
			addr := fmt.Sprintf("sparkform_data.r[%d]", i%500)
			if err := s.PutIntent(&Intent{Address: addr, Action: "update"}); err != nil {
				fmt.Println("err:", err)
				return 1
			}
			time.Sleep(2 * time.Millisecond) // the provider call
			if err := s.PutResource(testResource(addr, fmt.Sprint(i))); err != nil {
				fmt.Println("err:", err)
				return 1
			}
			if err := s.DeleteIntent(addr); err != nil {
				fmt.Println("err:", err)
				return 1
			}
		}
	case "crash":
		addr := `gitkit_checkout.kit["a"]`
		if err := s.PutResource(testResource(addr, "v1")); err != nil {
			fmt.Println("err:", err)
			return 1
		}
		if err := s.PutIntent(&Intent{Address: addr, Action: "update", Resource: testResource(addr, "v2")}); err != nil {
			fmt.Println("err:", err)
			return 1
		}
		fmt.Println("intent")
		select {} // killed here, mid-"provider call"
	case "complete-then-intent", "complete-lost":
		if err := s.PutIntent(&Intent{Address: "a.x", Action: "create", Resource: testResource("a.x", "planned")}); err != nil {
			fmt.Println("err:", err)
			return 1
		}
		if err := s.Complete("a.x", testResource("a.x", "applied")); err != nil {
			fmt.Println("err:", err)
			return 1
		}
		if mode == "complete-lost" {
			return 0 // the deferred func waits for the pause
		}
		if err := s.PutIntent(&Intent{Address: "a.y", Action: "create", Resource: testResource("a.y", "planned")}); err != nil {
			fmt.Println("err:", err)
			return 1
		}
		fmt.Println("intent a.y")
		select {} // killed here: a.y's provider call
	}
	return closeChild(s)
}

func closeChild(s *BoltStore) int {
	if err := s.Close(); err != nil {
		fmt.Println("close:", err)
		return 1
	}
	fmt.Println("released")
	return 0
}

// child is a running child process with line-oriented stdout.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines *bufio.Scanner
}

func startChild(t testing.TB, mode, path string, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"STATE_TEST_CHILD=" + mode, "STATE_TEST_PATH=" + path}, env...)...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, stdin: stdin, lines: bufio.NewScanner(stdout)}
	t.Cleanup(func() {
		c.stdin.Close()
		if c.cmd.ProcessState == nil {
			c.cmd.Process.Kill()
			c.cmd.Wait()
		}
	})
	return c
}

// expect reads the child's next line and fails unless it is want.
func (c *child) expect(t testing.TB, want string) {
	t.Helper()
	if !c.lines.Scan() {
		t.Fatalf("child exited before printing %q: %v", want, c.lines.Err())
	}
	if got := c.lines.Text(); got != want {
		t.Fatalf("child printed %q, want %q", got, want)
	}
}

func (c *child) line(t *testing.T) string {
	t.Helper()
	if !c.lines.Scan() {
		t.Fatalf("child exited: %v", c.lines.Err())
	}
	return c.lines.Text()
}

func statePath(t testing.TB) string {
	return filepath.Join(t.TempDir(), ".sparkform", "state.db")
}

// openStore opens a writer and, after it is closed at cleanup, runs bbolt's
// integrity check on the file.
func openStore(t testing.TB, path string) *BoltStore {
	t.Helper()
	checkOnCleanup(t, path)
	s, err := Open(path, Options{Command: "test " + t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// checkOnCleanup registers tx.Check on path; registered before the store's
// Close, so it runs after it.
func checkOnCleanup(t testing.TB, path string) {
	t.Cleanup(func() {
		if _, err := os.Stat(path); err != nil {
			return
		}
		db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
		if err != nil {
			t.Errorf("integrity check: open: %v", err)
			return
		}
		defer db.Close()
		err = db.View(func(tx *bolt.Tx) error {
			for err := range tx.Check() {
				t.Errorf("integrity check %s: %v", path, err)
			}
			return nil
		})
		if err != nil {
			t.Errorf("integrity check: %v", err)
		}
	})
}

// testResource is a record shaped like the engine's: a few hundred bytes of
// value, node details, private restore data.
func testResource(addr, input string) *Resource {
	value, _ := json.Marshal(map[string]any{
		"id": addr, "input": input, "output": input,
		"path": "/home/kilork/exl3-kit/878e0ee", "repo": "https://github.com/coolbho3k/DeepSeek-v4.1-Flash-2x-DGX-Spark.git",
		"commit": "878e0eecd893fadc69ad2d58b2df0fabb0fae2ee", "tree_digest": "sha256:9f2c1b7e5d0a4c3b8e6f1a2d7c9b0e4f3a5d6c8b7e9f0a1b2c3d4e5f6a7b8c9d",
	})
	return &Resource{
		Address:       addr,
		Type:          strings.SplitN(addr, ".", 2)[0],
		Provider:      "builtin/sparkform",
		Node:          json.RawMessage(`{"name":"spark-01","host":"192.168.100.11","port":22,"user":"kilork"}`),
		SchemaVersion: 1,
		Value:         value,
		Private:       []byte("restore: nvidia_drm modeset=0 fbdev=1 (prior)\x00\x01\x02"),
		Dependencies:  []string{"kmod_module.nvidia_drm", "node.spark"},
		Status:        StatusReady,
	}
}

// runOps commits batch as the commit loop's batch does (runBatch), and
// returns each op's outcome.
func runOps(s *BoltStore, batch []*op) []error {
	errs := make([]error, len(batch))
	s.runBatch(batch, func(i int, err error) { errs[i] = err })
	return errs
}
