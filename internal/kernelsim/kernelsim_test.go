package kernelsim_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sparkform/sparkform/internal/kernelsim"
)

// run runs one shim as a real process, as a node would.
func run(t *testing.T, s *kernelsim.Sim, tool string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(s.Tool(tool), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func TestShims(t *testing.T) {
	type step struct {
		tool    string
		args    []string
		code    int
		stderr  string            // substring
		params  map[string]string // module/param -> value after the step ("" = absent)
		loaded  map[string]bool
		refcnt  map[string]int
		setup   func(s *kernelsim.Sim)
		explain string
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"boot state", []step{
			{tool: "lsmod", loaded: map[string]bool{"drm": true, "nvidia_drm": true, "brd": false},
				params: map[string]string{"nvidia_drm/modeset": "N", "nvidia_drm/fbdev": "N"},
				refcnt: map[string]int{"drm": 1, "nvidia_drm": 0}},
		}},
		{"reload nvidia_drm with bool params", []step{
			{tool: "rmmod", args: []string{"nvidia_drm"}, loaded: map[string]bool{"nvidia_drm": false, "drm": true}, refcnt: map[string]int{"drm": 0}},
			{tool: "modprobe", args: []string{"nvidia-drm", "modeset=1", "fbdev=0"},
				params: map[string]string{"nvidia_drm/modeset": "Y", "nvidia_drm/fbdev": "N"}, refcnt: map[string]int{"drm": 1}},
			{tool: "modprobe", args: []string{"nvidia_drm", "modeset=0"}, explain: "loaded: a no-op",
				params: map[string]string{"nvidia_drm/modeset": "Y"}},
		}},
		{"bool spellings", []step{
			{tool: "modprobe", args: []string{"-r", "nvidia_drm"}},
			{tool: "modprobe", args: []string{"nvidia_drm", "modeset=y", "fbdev=Y"}, params: map[string]string{"nvidia_drm/modeset": "Y", "nvidia_drm/fbdev": "Y"}},
			{tool: "rmmod", args: []string{"nvidia_drm"}},
			{tool: "modprobe", args: []string{"nvidia_drm", "modeset=n", "fbdev=1"}, params: map[string]string{"nvidia_drm/modeset": "N", "nvidia_drm/fbdev": "Y"}},
			{tool: "rmmod", args: []string{"nvidia_drm"}},
			{tool: "modprobe", args: []string{"nvidia_drm", "modeset=maybe"}, code: 1,
				stderr: "modprobe: ERROR: could not insert 'nvidia_drm': Invalid argument", loaded: map[string]bool{"nvidia_drm": false}},
		}},
		{"int params, hidden params, unknown params", []step{
			{tool: "modprobe", args: []string{"brd", "rd_nr=2", "rd_size=0x1000", "nosuch=1"},
				params: map[string]string{"brd/rd_nr": "2", "brd/rd_size": "4096", "brd/max_part": "1"}},
			{tool: "modprobe", args: []string{"dummy", "numdummies=3"}, params: map[string]string{"dummy/numdummies": ""}, loaded: map[string]bool{"dummy": true}},
			{tool: "rmmod", args: []string{"brd"}},
			{tool: "modprobe", args: []string{"brd", "rd_nr=two"}, code: 1, stderr: "Invalid argument"},
		}},
		{"modprobe.d options, then the command line", []step{
			{setup: func(s *kernelsim.Sim) { s.SetModprobeOptions("brd", "rd_nr=5 rd_size=2048") },
				tool: "modprobe", args: []string{"brd", "rd_nr=7"}, params: map[string]string{"brd/rd_nr": "7", "brd/rd_size": "2048"}},
			{tool: "rmmod", args: []string{"brd"}},
			{tool: "modprobe", args: []string{"brd"}, params: map[string]string{"brd/rd_nr": "5", "brd/rd_size": "2048"}},
		}},
		{"errors have the real kmod texts", []step{
			{tool: "modprobe", args: []string{"nosuchmod"}, code: 1, stderr: "modprobe: FATAL: Module nosuchmod not found in directory /lib/modules/"},
			{tool: "rmmod", args: []string{"brd"}, code: 1, stderr: "rmmod: ERROR: Module brd is not currently loaded"},
			{tool: "modprobe", args: []string{"-r", "brd"}, code: 1, stderr: "modprobe: FATAL: Module brd is not in kernel."},
			{tool: "rmmod", args: []string{"drm"}, code: 1, stderr: "rmmod: ERROR: Module drm is in use by: nvidia_drm"},
			{tool: "modprobe", args: []string{"-r", "drm"}, code: 1, stderr: "modprobe: FATAL: Module drm is in use."},
		}},
		{"a process holding a module", []step{
			{setup: func(s *kernelsim.Sim) { s.Use("nvidia_drm") }, tool: "rmmod", args: []string{"nvidia_drm"},
				code: 1, stderr: "rmmod: ERROR: Module nvidia_drm is in use\n", refcnt: map[string]int{"nvidia_drm": 1}},
			{tool: "kernelsim", args: []string{"release", "nvidia_drm"}, refcnt: map[string]int{"nvidia_drm": 0}},
			{tool: "rmmod", args: []string{"nvidia_drm"}, loaded: map[string]bool{"nvidia_drm": false}},
		}},
		{"modprobe -r takes unused deps, rmmod does not", []step{
			{tool: "modprobe", args: []string{"-r", "nvidia_drm"}, loaded: map[string]bool{"nvidia_drm": false, "drm": false}},
			{tool: "modprobe", args: []string{"nvidia_drm"}, loaded: map[string]bool{"nvidia_drm": true, "drm": true}},
			{tool: "rmmod", args: []string{"nvidia_drm"}, loaded: map[string]bool{"nvidia_drm": false, "drm": true}},
		}},
		{"reboot resets everything", []step{
			{tool: "modprobe", args: []string{"brd"}},
			{tool: "rmmod", args: []string{"nvidia_drm"}},
			{tool: "modprobe", args: []string{"nvidia_drm", "modeset=1"}},
			{setup: func(s *kernelsim.Sim) { s.Use("brd") }, tool: "kernelsim", args: []string{"reboot"},
				loaded: map[string]bool{"brd": false, "nvidia_drm": true}, params: map[string]string{"nvidia_drm/modeset": "N"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := kernelsim.New(t, kernelsim.SeedCatalog)
			for i, st := range tt.steps {
				if st.setup != nil {
					st.setup(s)
				}
				_, stderr, code := run(t, s, st.tool, st.args...)
				if code != st.code || (st.stderr == "" && stderr != "") || !strings.Contains(stderr, st.stderr) {
					t.Fatalf("step %d %s %v: exit %d stderr %q; want exit %d stderr containing %q", i, st.tool, st.args, code, stderr, st.code, st.stderr)
				}
				for k, want := range st.params {
					mod, p, _ := strings.Cut(k, "/")
					if got := s.Param(mod, p); got != want {
						t.Errorf("step %d: %s = %q, want %q", i, k, got, want)
					}
				}
				for m, want := range st.loaded {
					if got := s.Loaded(m); got != want {
						t.Errorf("step %d: loaded(%s) = %v, want %v", i, m, got, want)
					}
				}
				for m, want := range st.refcnt {
					if got := s.Refcnt(m); got != want {
						t.Errorf("step %d: refcnt(%s) = %d, want %d", i, m, got, want)
					}
				}
			}
		})
	}
}

func TestLsmodAndProcModules(t *testing.T) {
	s := kernelsim.New(t, kernelsim.SeedCatalog)
	out, _, _ := run(t, s, "lsmod")
	want := "Module                  Size  Used by\n" +
		"drm                   753664  1 nvidia_drm\n" +
		"nvidia_drm            126976  0\n"
	if out != want {
		t.Errorf("lsmod:\n%s\nwant:\n%s", out, want)
	}
	pm, _ := os.ReadFile(filepath.Join(s.Root, "proc", "modules"))
	if !strings.Contains(string(pm), "drm 753664 1 nvidia_drm, Live") {
		t.Errorf("/proc/modules:\n%s", pm)
	}
	if fi, err := os.Stat(filepath.Join(s.ModuleDir(), "nvidia_drm", "parameters", "modeset")); err != nil || fi.Mode().Perm() != 0o444 {
		t.Errorf("modeset should be a read-only (0444) sysfs file: %v %v", fi, err)
	}
	if l, err := os.Readlink(filepath.Join(s.ModuleDir(), "drm", "holders", "nvidia_drm")); err != nil || l != "../../nvidia_drm" {
		t.Errorf("holder link: %q %v", l, err)
	}
}

func TestCatalogErrors(t *testing.T) {
	tests := []struct{ text, want string }{
		{"a\na", "listed twice"},
		{"a depends=b", `depends on "b"`},
		{"a p:float=1", `unknown type "float"`},
		{"a p:int=x", "not a valid int"},
		{"a p:int", "has no default"},
		{"a p:bool:wo=Y", `mode "wo"`},
		{"a frob", `unknown token "frob"`},
	}
	for _, tt := range tests {
		_, err := kernelsim.ParseCatalog(tt.text)
		if !errors.Is(err, kernelsim.ErrCatalog) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseCatalog(%q) = %v, want ErrCatalog containing %q", tt.text, err, tt.want)
		}
	}
	c, err := kernelsim.ParseCatalog(kernelsim.SeedCatalog)
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := c.Lookup("nvidia-drm"); !ok || len(m.Params) != 2 || !m.Boot || m.Depends[0] != "drm" {
		t.Errorf("Lookup(nvidia-drm) = %+v %v", m, ok)
	}
}
