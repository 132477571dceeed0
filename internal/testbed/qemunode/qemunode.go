package qemunode

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sparkform/sparkform/internal/realpart"
	"github.com/sparkform/sparkform/providers/sdk"
)

//go:embed build-node.sh
var buildScript []byte

// ErrUnavailable means this machine cannot build or boot the node (no
// qemu, no build tools, no kernel package).
var ErrUnavailable = errors.New("qemunode: real-kernel test node unavailable")

// BootTimeout bounds a boot (TCG under load has been measured at 7-20 s).
var BootTimeout = 180 * time.Second

// Image is a built node image.
type Image struct {
	Dir          string // holds the files below
	Kernel       string // vmlinuz
	Initrd       string // initrd.cpio.gz
	IdentityFile string // root's client key
	HostKey      string // "ssh-ed25519 AAAA..." of the guest
	KernelVer    string
	// BuildTime is how long Build took (0 when it came from the cache).
	BuildTime time.Duration
}

// CacheDir is where images are cached: $SPARKFORM_QEMU_CACHE, else
// $XDG_CACHE_HOME/sparkform-qemu, else ~/.cache/sparkform-qemu.
func CacheDir() string {
	if d := os.Getenv("SPARKFORM_QEMU_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "sparkform-qemu")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".cache", "sparkform-qemu")
	}
	return filepath.Join(os.TempDir(), "sparkform-qemu")
}

// Available says whether qemu is installed.
func Available() error {
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		return fmt.Errorf("%w: qemu-system-x86_64 not found (apt-get install qemu-system-x86)", ErrUnavailable)
	}
	return nil
}

// Build builds the image into cache (CacheDir when empty) unless a build of
// the same script is there already. Concurrent callers (several test
// processes) wait for one build under a file lock.
func Build(cache string) (*Image, error) {
	if cache == "" {
		cache = CacheDir()
	}
	if err := Available(); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(append(append([]byte{}, buildScript...), os.Getenv("EXTRA_MODULES")...))
	key := hex.EncodeToString(sum[:6])
	out := filepath.Join(cache, "image-"+key)
	work := filepath.Join(cache, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(cache, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, err
	}
	var took time.Duration
	if _, err := os.Stat(filepath.Join(out, "node.env")); err != nil {
		script := filepath.Join(cache, "build-node-"+key+".sh")
		if err := os.WriteFile(script, buildScript, 0o755); err != nil {
			return nil, err
		}
		t0 := time.Now()
		cmd := exec.Command("bash", script, out+".tmp", work)
		var logb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &logb, &logb
		if err := cmd.Run(); err != nil {
			os.RemoveAll(out + ".tmp")
			var ee *exec.ExitError
			if errors.As(err, &ee) && ee.ExitCode() == 3 {
				return nil, fmt.Errorf("%w: %s", ErrUnavailable, strings.TrimSpace(logb.String()))
			}
			return nil, fmt.Errorf("qemunode: building the image failed: %v\n%s", err, logb.String())
		}
		os.RemoveAll(out)
		if err := os.Rename(out+".tmp", out); err != nil {
			return nil, err
		}
		took = time.Since(t0)
	}
	env, err := os.ReadFile(filepath.Join(out, "node.env"))
	if err != nil {
		return nil, err
	}
	hk, err := os.ReadFile(filepath.Join(out, "host_key.pub"))
	if err != nil {
		return nil, err
	}
	return &Image{
		Dir: out, Kernel: filepath.Join(out, "vmlinuz"), Initrd: filepath.Join(out, "initrd.cpio.gz"),
		IdentityFile: filepath.Join(out, "id_ed25519"), HostKey: strings.TrimSpace(string(hk)),
		KernelVer: strings.TrimSpace(strings.TrimPrefix(string(env), "KVER=")), BuildTime: took,
	}, nil
}

// Node is one running VM.
type Node struct {
	Image      *Image
	Port       int
	KnownHosts string
	Accel      string
	// BootTime is from qemu start to the SSH banner; ConsoleReady to the
	// "ready" line of /init.
	BootTime, ConsoleReady time.Duration

	dir  string
	cmd  *exec.Cmd
	done chan struct{}
	stop sync.Once
}

// SDK returns the sdk.Node that reaches the VM as root over SSH.
func (n *Node) SDK() sdk.Node {
	return sdk.Node{
		Name: "qemu", Transport: "ssh", Host: "127.0.0.1", Port: n.Port, User: "root",
		IdentityFile: n.Image.IdentityFile, KnownHosts: n.KnownHosts, Timeout: 30 * time.Second,
	}
}

// Console returns what the guest has printed on its serial console.
func (n *Node) Console() string {
	b, _ := os.ReadFile(filepath.Join(n.dir, "console.log"))
	return string(b)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func accel() string {
	// TCG by default: a /dev/kvm that opens is no promise (nested sandboxes
	// fail on MSR writes and hang with an empty console), so KVM is opt-in.
	if a := os.Getenv("SPARKFORM_QEMU_ACCEL"); a != "" {
		return a
	}
	return "tcg"
}

// Start boots img with its files (console log, known_hosts) in dir.
func Start(dir string, img *Image) (*Node, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	n := &Node{Image: img, Port: port, dir: dir, Accel: accel(), done: make(chan struct{})}
	n.KnownHosts = filepath.Join(dir, "known_hosts")
	line := "[127.0.0.1]:" + strconv.Itoa(port) + " " + img.HostKey + "\n"
	if err := os.WriteFile(n.KnownHosts, []byte(line), 0o644); err != nil {
		return nil, err
	}
	acc := n.Accel
	if acc == "tcg" {
		acc = "tcg,tb-size=64"
	}
	console := filepath.Join(dir, "console.log")
	qlog, err := os.Create(filepath.Join(dir, "qemu.log"))
	if err != nil {
		return nil, err
	}
	defer qlog.Close()
	n.cmd = exec.Command("qemu-system-x86_64", "-machine", "q35", "-accel", acc, "-m", "512", "-smp", "1",
		"-no-reboot", "-kernel", img.Kernel, "-initrd", img.Initrd,
		"-append", "console=ttyS0 quiet panic=-1",
		// restrict=on: the guest reaches nothing outside qemu; hostfwd still works.
		"-netdev", "user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:"+strconv.Itoa(port)+"-:22",
		"-device", "virtio-net-pci,netdev=n0",
		"-serial", "file:"+console, "-monitor", "none", "-display", "none")
	n.cmd.Stdout, n.cmd.Stderr = qlog, qlog
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the test
	t0 := time.Now()
	if err := n.cmd.Start(); err != nil {
		return nil, fmt.Errorf("qemunode: starting qemu: %w", err)
	}
	go func() { n.cmd.Wait(); close(n.done) }()
	deadline := t0.Add(BootTimeout)
	fail := func(what string) (*Node, error) {
		n.Stop()
		ql, _ := os.ReadFile(filepath.Join(dir, "qemu.log"))
		return nil, fmt.Errorf("qemunode: %s (accel %s)\nqemu: %s\nconsole:\n%s", what, n.Accel, ql, tail(n.Console(), 3000))
	}
	for !strings.Contains(n.Console(), "qemu-node: ready") {
		select {
		case <-n.done:
			return fail("qemu exited during boot")
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fail(fmt.Sprintf("no ready line on the console after %s", BootTimeout))
		}
	}
	n.ConsoleReady = time.Since(t0)
	for !banner(n.Port) {
		if time.Now().After(deadline) {
			return fail("dropbear did not answer on the forwarded port")
		}
		select {
		case <-n.done:
			return fail("qemu exited during boot")
		case <-time.After(100 * time.Millisecond):
		}
	}
	n.BootTime = time.Since(t0)
	return n, nil
}

// banner reports whether an SSH server answers on the port (slirp accepts
// connections before the guest listens, so a connect alone proves nothing).
func banner(port int) bool {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 8)
	k, _ := c.Read(buf)
	return strings.HasPrefix(string(buf[:k]), "SSH-")
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// Stop kills the VM (its state is an initramfs: nothing to save).
func (n *Node) Stop() error {
	n.stop.Do(func() {
		if n.cmd.Process != nil {
			n.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-n.done:
			case <-time.After(5 * time.Second):
				n.cmd.Process.Kill()
				<-n.done
			}
		}
	})
	return nil
}

var shared struct {
	once sync.Once
	img  *Image
	err  error
}

// StartT builds the image once per test process (cached across runs),
// boots a node for t and stops it when t ends. Boot and build times are
// logged. Missing parts skip the test, or fail it when CI=true.
func StartT(t testing.TB) *Node {
	t.Helper()
	shared.once.Do(func() { shared.img, shared.err = Build("") })
	if shared.err != nil {
		if errors.Is(shared.err, ErrUnavailable) {
			realpart.Missing(t, "the qemu node: %v", shared.err)
		}
		t.Fatal(shared.err)
	}
	if shared.img.BuildTime > 0 {
		t.Logf("qemunode: built image %s (kernel %s) in %s", shared.img.Dir, shared.img.KernelVer, shared.img.BuildTime.Round(time.Millisecond))
	}
	n, err := Start(t.TempDir(), shared.img)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("qemunode: kernel %s booted (accel %s): console ready %s, ssh %s, port %d",
		shared.img.KernelVer, n.Accel, n.ConsoleReady.Round(time.Millisecond), n.BootTime.Round(time.Millisecond), n.Port)
	t.Cleanup(func() { n.Stop() })
	return n
}
