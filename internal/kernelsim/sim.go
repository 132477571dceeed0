package kernelsim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// KernelVersion is the release the simulator reports in messages.
const KernelVersion = "6.1.0-sim"

// Sim is a simulated kernel rooted at a directory. Its state is the
// directory tree itself, so several processes (the shims) share it; every
// operation takes a file lock.
type Sim struct {
	Root string
	cat  *Catalog
}

// Open opens an existing simulator directory (made by Create).
func Open(root string) (*Sim, error) {
	b, err := os.ReadFile(filepath.Join(root, "lib", "modules", "catalog"))
	if err != nil {
		return nil, fmt.Errorf("kernelsim: %s is not a simulator root (no lib/modules/catalog): %w", root, err)
	}
	cat, err := ParseCatalog(string(b))
	if err != nil {
		return nil, err
	}
	return &Sim{Root: root, cat: cat}, nil
}

// Create lays out a fresh simulator in root with the given catalogue, writes
// shims that exec bin (the cmd/kernelsim binary) and boots it. bin may be
// empty when only the Go API is used.
func Create(root, catalog, bin string) (*Sim, error) {
	cat, err := ParseCatalog(catalog)
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"sys/module", "proc", "etc/modprobe.d", "lib/modules", "bin", "var/uses"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(root, "lib", "modules", "catalog"), []byte(catalog), 0o644); err != nil {
		return nil, err
	}
	if bin != "" {
		for _, tool := range []string{"modprobe", "rmmod", "lsmod", "kernelsim"} {
			// The root and the tool are baked in; "$@" passes the caller's
			// argv through untouched.
			script := "#!/bin/sh\n# kernelsim shim: a SIMULATED " + tool + " (test bed only)\nexec " +
				shQuote(bin) + " --root " + shQuote(root) + " " + tool + ` "$@"` + "\n"
			if err := os.WriteFile(filepath.Join(root, "bin", tool), []byte(script), 0o755); err != nil {
				return nil, err
			}
		}
	}
	s := &Sim{Root: root, cat: cat}
	return s, s.Reboot()
}

func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// ModuleDir is Root/sys/module: what a provider uses as its sysfs module dir.
func (s *Sim) ModuleDir() string { return filepath.Join(s.Root, "sys", "module") }

// SysfsRoot is Root/sys, the simulated /sys.
func (s *Sim) SysfsRoot() string { return filepath.Join(s.Root, "sys") }

// Tool is the path of a shim (modprobe, rmmod, lsmod).
func (s *Sim) Tool(name string) string { return filepath.Join(s.Root, "bin", name) }

func (s *Sim) lock() (func(), error) {
	f, err := os.OpenFile(filepath.Join(s.Root, ".lock"), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

func (s *Sim) modDir(name string) string { return filepath.Join(s.ModuleDir(), name) }

// Loaded reports whether the module is loaded.
func (s *Sim) Loaded(name string) bool {
	_, err := os.Stat(s.modDir(NormalizeName(name)))
	return err == nil
}

// Param reads a parameter's sysfs value ("" when absent).
func (s *Sim) Param(module, param string) string {
	b, err := os.ReadFile(filepath.Join(s.modDir(NormalizeName(module)), "parameters", param))
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(b), "\n")
}

// Refcnt reads a loaded module's refcount (-1 when not loaded).
func (s *Sim) Refcnt(module string) int {
	b, err := os.ReadFile(filepath.Join(s.modDir(NormalizeName(module)), "refcnt"))
	if err != nil {
		return -1
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// SetModprobeOptions writes Root/etc/modprobe.d/NAME.conf with one
// "options" line, as an administrator would (empty opts removes it).
func (s *Sim) SetModprobeOptions(module, opts string) error {
	p := filepath.Join(s.Root, "etc", "modprobe.d", NormalizeName(module)+".conf")
	if opts == "" {
		err := os.Remove(p)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	return os.WriteFile(p, []byte("options "+NormalizeName(module)+" "+opts+"\n"), 0o644)
}

// Reboot unloads everything (uses included) and loads the boot modules with
// their modprobe.d options.
func (s *Sim) Reboot() error {
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	for _, d := range []string{"sys/module", "var/uses"} {
		if err := os.RemoveAll(filepath.Join(s.Root, d)); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(s.Root, d), 0o755); err != nil {
			return err
		}
	}
	for _, m := range s.cat.Modules {
		if m.Boot && !s.Loaded(m.Name) {
			if err := s.load(m.Name, nil); err != nil {
				return err
			}
		}
	}
	return s.writeProcModules()
}

// Use takes a reference on a loaded module, as a process holding its
// device open does; Release drops one.
func (s *Sim) Use(module string) error { return s.addUse(module, 1) }

// Release drops a reference taken by Use.
func (s *Sim) Release(module string) error { return s.addUse(module, -1) }

func (s *Sim) addUse(module string, d int) error {
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	name := NormalizeName(module)
	if !s.Loaded(name) {
		return fmt.Errorf("%w: %s", ErrNotLoaded, name)
	}
	n := s.uses(name) + d
	if n < 0 {
		n = 0
	}
	if err := os.WriteFile(filepath.Join(s.Root, "var", "uses", name), []byte(strconv.Itoa(n)), 0o644); err != nil {
		return err
	}
	return s.updateRefcnt(name)
}

func (s *Sim) uses(name string) int {
	b, err := os.ReadFile(filepath.Join(s.Root, "var", "uses", name))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

func (s *Sim) holders(name string) []string {
	ents, _ := os.ReadDir(filepath.Join(s.modDir(name), "holders"))
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

func (s *Sim) updateRefcnt(name string) error {
	n := len(s.holders(name)) + s.uses(name)
	if err := os.WriteFile(filepath.Join(s.modDir(name), "refcnt"), []byte(strconv.Itoa(n)+"\n"), 0o444); err != nil {
		return err
	}
	return s.writeProcModules()
}

// modprobeOptions returns the "options NAME ..." words of Root/etc/modprobe.d.
func (s *Sim) modprobeOptions(name string) []string {
	files, _ := filepath.Glob(filepath.Join(s.Root, "etc", "modprobe.d", "*.conf"))
	sort.Strings(files)
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for sc.Scan() {
			w := strings.Fields(sc.Text())
			if len(w) >= 2 && w[0] == "options" && NormalizeName(w[1]) == name {
				out = append(out, w[2:]...)
			}
		}
	}
	return out
}

// load loads name (deps first, plain) with modprobe.d options then args.
// The caller holds the lock.
func (s *Sim) load(name string, args []string) error {
	m, ok := s.cat.Lookup(name)
	if !ok {
		return fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	if s.Loaded(m.Name) {
		return nil // modprobe of a loaded module is a no-op, whatever the args
	}
	for _, d := range m.Depends {
		if err := s.load(d, nil); err != nil {
			return err
		}
	}
	vals := map[string]string{}
	for _, p := range m.Params {
		vals[p.Name] = p.Default
	}
	for _, a := range append(s.modprobeOptions(m.Name), args...) {
		k, v, hasV := strings.Cut(a, "=")
		var p *Param
		for i := range m.Params {
			if m.Params[i].Name == k {
				p = &m.Params[i]
			}
		}
		if p == nil {
			continue // the kernel ignores unknown parameters (with a dmesg warning)
		}
		if !hasV && p.Type != "bool" {
			return fmt.Errorf("%w: %s: parameter %s needs a value", ErrInvalid, m.Name, k)
		}
		norm, err := formatParam(p.Type, v)
		if err != nil {
			return fmt.Errorf("%w: %s: %s=%q", ErrInvalid, m.Name, k, v)
		}
		vals[k] = norm
	}
	dir := s.modDir(m.Name)
	if err := os.MkdirAll(filepath.Join(dir, "parameters"), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "holders"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "initstate"), []byte("live\n"), 0o444); err != nil {
		return err
	}
	for _, p := range m.Params {
		if p.Mode == 0 {
			continue // mode 0: the kernel does not show it in sysfs
		}
		if err := os.WriteFile(filepath.Join(dir, "parameters", p.Name), []byte(vals[p.Name]+"\n"), p.Mode); err != nil {
			return err
		}
	}
	if err := s.updateRefcnt(m.Name); err != nil {
		return err
	}
	for _, d := range m.Depends {
		if err := os.Symlink("../../"+m.Name, filepath.Join(s.modDir(d), "holders", m.Name)); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		if err := s.updateRefcnt(d); err != nil {
			return err
		}
	}
	return nil
}

// unload removes one module; with deps it also removes dependencies left
// unused (modprobe -r). The caller holds the lock.
func (s *Sim) unload(name string, deps bool) error {
	if !s.Loaded(name) {
		return fmt.Errorf("%w: %s", ErrNotLoaded, name)
	}
	if n := len(s.holders(name)) + s.uses(name); n > 0 {
		return fmt.Errorf("%w: %s", ErrInUse, name)
	}
	if err := os.RemoveAll(s.modDir(name)); err != nil {
		return err
	}
	os.Remove(filepath.Join(s.Root, "var", "uses", name))
	m, _ := s.cat.Lookup(name)
	for _, d := range m.Depends {
		os.Remove(filepath.Join(s.modDir(d), "holders", name))
		if err := s.updateRefcnt(d); err != nil {
			return err
		}
		if deps && len(s.holders(d))+s.uses(d) == 0 {
			if err := s.unload(d, true); err != nil {
				return err
			}
		}
	}
	return s.writeProcModules()
}

func (s *Sim) writeProcModules() error {
	ents, err := os.ReadDir(s.ModuleDir())
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, e := range ents {
		m, _ := s.cat.Lookup(e.Name())
		h := strings.Join(s.holders(e.Name()), ",")
		if h == "" {
			h = "-"
		} else {
			h += ","
		}
		fmt.Fprintf(&b, "%s %d %d %s Live 0x0000000000000000\n", e.Name(), m.Size, len(s.holders(e.Name()))+s.uses(e.Name()), h)
	}
	return os.WriteFile(filepath.Join(s.Root, "proc", "modules"), []byte(b.String()), 0o444)
}

// Main runs one shim invocation (tool is modprobe, rmmod, lsmod or
// kernelsim) with the real tools' output and exit codes.
func (s *Sim) Main(tool string, args []string, stdout, stderr io.Writer) int {
	if tool == "kernelsim" {
		return s.control(args, stderr) // Reboot/Use take the lock themselves
	}
	unlock, err := s.lock()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", tool, err)
		return 1
	}
	defer unlock()
	switch tool {
	case "modprobe":
		return s.modprobe(args, stderr)
	case "rmmod":
		return s.rmmod(args, stderr)
	case "lsmod":
		return s.lsmod(stdout)
	}
	fmt.Fprintf(stderr, "kernelsim: unknown tool %q\n", tool)
	return 2
}

func (s *Sim) modprobe(args []string, stderr io.Writer) int {
	remove, quiet := false, false
	var rest []string
	for i, a := range args {
		if !strings.HasPrefix(a, "-") {
			rest = args[i:]
			break
		}
		switch a {
		case "-r", "--remove":
			remove = true
		case "-q", "--quiet":
			quiet = true
		case "-v", "--verbose", "-b", "--use-blacklist":
		default:
			fmt.Fprintf(stderr, "modprobe: ERROR: unrecognized option %q (kernelsim supports -r -q -v)\n", a)
			return 1
		}
	}
	if len(rest) == 0 {
		fmt.Fprintln(stderr, "modprobe: ERROR: missing parameters. See -h.")
		return 1
	}
	if remove {
		for _, n := range rest {
			name := NormalizeName(n)
			if err := s.unload(name, true); err != nil {
				switch {
				case errors.Is(err, ErrNotLoaded):
					if _, ok := s.cat.Lookup(name); !ok {
						if !quiet {
							fmt.Fprintf(stderr, "modprobe: FATAL: Module %s not found.\n", name)
						}
						return 1
					}
					fmt.Fprintf(stderr, "modprobe: FATAL: Module %s is not in kernel.\n", name)
				case errors.Is(err, ErrInUse):
					fmt.Fprintf(stderr, "modprobe: FATAL: Module %s is in use.\n", name)
				default:
					fmt.Fprintf(stderr, "modprobe: FATAL: %v\n", err)
				}
				return 1
			}
		}
		return 0
	}
	name := NormalizeName(rest[0])
	if err := s.load(name, rest[1:]); err != nil {
		switch {
		case errors.Is(err, ErrNotFound):
			if !quiet {
				fmt.Fprintf(stderr, "modprobe: FATAL: Module %s not found in directory /lib/modules/%s\n", name, KernelVersion)
			}
		case errors.Is(err, ErrInvalid):
			fmt.Fprintf(stderr, "modprobe: ERROR: could not insert '%s': Invalid argument\n", name)
		default:
			fmt.Fprintf(stderr, "modprobe: ERROR: could not insert '%s': %v\n", name, err)
		}
		return 1
	}
	if err := s.writeProcModules(); err != nil {
		fmt.Fprintf(stderr, "modprobe: ERROR: %v\n", err)
		return 1
	}
	return 0
}

func (s *Sim) rmmod(args []string, stderr io.Writer) int {
	var names []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue // -f/-s/-v: nothing to model
		}
		names = append(names, a)
	}
	if len(names) == 0 {
		fmt.Fprintln(stderr, "rmmod: ERROR: missing module name.")
		return 1
	}
	rc := 0
	for _, n := range names {
		name := NormalizeName(filepath.Base(strings.TrimSuffix(n, ".ko")))
		err := s.unload(name, false)
		switch {
		case err == nil:
		case errors.Is(err, ErrNotLoaded):
			fmt.Fprintf(stderr, "rmmod: ERROR: Module %s is not currently loaded\n", name)
			rc = 1
		case errors.Is(err, ErrInUse):
			if h := s.holders(name); len(h) > 0 {
				fmt.Fprintf(stderr, "rmmod: ERROR: Module %s is in use by: %s\n", name, strings.Join(h, " "))
			} else {
				fmt.Fprintf(stderr, "rmmod: ERROR: Module %s is in use\n", name)
			}
			rc = 1
		default:
			fmt.Fprintf(stderr, "rmmod: ERROR: %v\n", err)
			rc = 1
		}
	}
	return rc
}

func (s *Sim) lsmod(stdout io.Writer) int {
	b, err := os.ReadFile(filepath.Join(s.Root, "proc", "modules"))
	if err != nil {
		return 1
	}
	fmt.Fprintln(stdout, "Module                  Size  Used by")
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 {
			continue
		}
		size, _ := strconv.Atoi(f[1])
		line := fmt.Sprintf("%-19s %8d  %s", f[0], size, f[2])
		if f[3] != "-" {
			line += " " + strings.TrimSuffix(f[3], ",")
		}
		fmt.Fprintln(stdout, line)
	}
	return 0
}

// control is the `kernelsim` tool: reboot | use NAME | release NAME.
func (s *Sim) control(args []string, stderr io.Writer) int {
	var err error
	switch {
	case len(args) == 1 && args[0] == "reboot":
		err = s.Reboot()
	case len(args) == 2 && args[0] == "use":
		err = s.Use(args[1])
	case len(args) == 2 && args[0] == "release":
		err = s.Release(args[1])
	default:
		fmt.Fprintln(stderr, "usage: kernelsim reboot | use NAME | release NAME")
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "kernelsim: %v\n", err)
		return 1
	}
	return 0
}
