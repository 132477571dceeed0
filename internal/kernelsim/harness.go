package kernelsim

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var build struct {
	once sync.Once
	bin  string
	err  error
}

// Binary builds cmd/kernelsim once per process and returns its path. The
// directory is world-readable so that non-root SSH test users can run it.
func Binary() (string, error) {
	build.once.Do(func() {
		dir, err := os.MkdirTemp("", "sparkform-kernelsim-")
		if err != nil {
			build.err = err
			return
		}
		os.Chmod(dir, 0o755)
		goBin, err := exec.LookPath("go")
		if err != nil {
			// Tests run from `go test`, which puts its own go first in
			// PATH; a bare environment falls back to the GOROOT go env names.
			goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
		}
		bin := filepath.Join(dir, "kernelsim")
		cmd := exec.Command(goBin, "build", "-o", bin, "github.com/sparkform/sparkform/internal/kernelsim/cmd/kernelsim")
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("kernelsim: building the shim binary: %v\n%s", err, out)
			return
		}
		build.bin = bin
	})
	return build.bin, build.err
}

// New creates a simulator with the given catalogue in a fresh test
// directory and boots it. The directory and its parents up to the temp dir
// are made world-searchable so SSH test-bed users (through sudo) reach it.
func New(t testing.TB, catalog string) *Sim {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "kernelsim")
	for d := filepath.Dir(root); len(d) > len(os.TempDir()); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	s, err := Create(root, catalog, bin)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// SeedCatalog is the seed's node: drm and nvidia_drm (modeset, fbdev: bool,
// read-only) loaded at boot, plus brd as a module with int parameters.
const SeedCatalog = `# kernelsim catalogue: a SIMULATED DGX Spark kernel
drm        boot size=753664
nvidia_drm depends=drm boot size=126976 modeset:bool:ro=N fbdev:bool:ro=N
brd        size=16384 rd_nr:int:ro=16 rd_size:ulong:ro=4096 max_part:int:ro=1
loop       size=40960 max_loop:int:ro=0 max_part:int:ro=0 hw_queue_depth:int:ro=128
dummy      numdummies:int:hidden=1
`
