package testbed

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// StracePath is the strace the process accounting of Node.Trace runs.
const StracePath = "/usr/bin/strace"

// A Tracer records every process the node's sshd starts while it runs:
// the per-connection sshd processes, each session's shell, sudo and
// whatever they run. It is strace -f attached to the listener (a real
// tracer: a root strace follows setuid programs such as sudo), reading
// only process creation and execve, so what it finds does not depend on
// how the commands were started.
type Tracer struct {
	node *Node
	cmd  *exec.Cmd
	out  string
	done chan struct{}
}

// Procs is what a Tracer saw: one entry per process started below the
// listener (the listener itself excluded).
type Procs []Proc

// Proc is one process: its pid and parent, and the argv of each execve it
// made (none for a fork that never exec'd, such as sshd's own children).
type Proc struct {
	Pid, Parent int
	Execs       [][]string
}

// Program is the base name of the last program p exec'd, or "(fork of
// PARENT'S PROGRAM)" when it exec'd nothing.
func (p Proc) Program() string {
	if len(p.Execs) == 0 {
		return ""
	}
	a := p.Execs[len(p.Execs)-1]
	if len(a) == 0 {
		return ""
	}
	return filepath.Base(a[0])
}

// Effective is the program p runs: the last it exec'd, else (a fork that
// exec'd nothing, such as a subshell or sshd's own children) its
// parent's, as the fork copied it.
func (ps Procs) Effective(p Proc) string {
	by := make(map[int]Proc, len(ps))
	for _, q := range ps {
		by[q.Pid] = q
	}
	for i := 0; i < len(ps)+1; i++ {
		if name := p.Program(); name != "" {
			return name
		}
		parent, ok := by[p.Parent]
		if !ok {
			return "sshd" // the listener
		}
		p = parent
	}
	return ""
}

// Count is how many processes exec'd a program whose base name is prog
// (a process counts once however many times it exec'd it).
func (ps Procs) Count(prog string) int {
	n := 0
	for _, p := range ps {
		for _, a := range p.Execs {
			if len(a) > 0 && filepath.Base(a[0]) == prog {
				n++
				break
			}
		}
	}
	return n
}

// Programs sums the processes by the last program each exec'd ("-" for
// processes that exec'd nothing), for messages.
func (ps Procs) Programs() string {
	m := map[string]int{}
	for _, p := range ps {
		name := p.Program()
		if name == "" {
			name = "-"
		}
		m[name]++
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%d ", k, m[k])
	}
	return strings.TrimSpace(b.String())
}

// Root returns the ancestor of p just below the process for which below
// returns true (p itself when its parent is one), and false when there is
// none among the traced processes.
func (ps Procs) Root(p Proc, below func(Proc) bool) (Proc, bool) {
	by := make(map[int]Proc, len(ps))
	for _, q := range ps {
		by[q.Pid] = q
	}
	for {
		parent, ok := by[p.Parent]
		if !ok {
			return Proc{}, false
		}
		if below(parent) {
			return p, true
		}
		p = parent
	}
}

// Trace starts recording the processes n's sshd starts, until Stop. It
// returns once strace has attached.
func (n *Node) Trace() (*Tracer, error) {
	if n.cmd == nil || n.cmd.Process == nil {
		return nil, fmt.Errorf("testbed: %s: sshd is not running", n.Name)
	}
	if _, err := os.Stat(StracePath); err != nil {
		return nil, fmt.Errorf("%w: %s not found (apt-get install strace)", ErrUnavailable, StracePath)
	}
	f, err := os.CreateTemp("", "sparkform-trace-")
	if err != nil {
		return nil, err
	}
	f.Close()
	t := &Tracer{node: n, out: f.Name(), done: make(chan struct{})}
	// -f follows every child; only process creation and execve are
	// reported (with whole argv: -v -s), no signals; exits are kept.
	t.cmd = exec.Command(StracePath, "-f", "-v", "-s", "4096", "-e", "trace=execve,clone,clone3,fork,vfork",
		"-e", "signal=none", "-o", t.out, "-p", strconv.Itoa(n.cmd.Process.Pid))
	stderr, err := t.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		os.Remove(t.out)
		return nil, err
	}
	attached := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		var seen strings.Builder
		for sc.Scan() {
			seen.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "attached") {
				attached <- ""
				break
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		select {
		case attached <- seen.String():
		default:
		}
		_ = t.cmd.Wait()
		close(t.done)
	}()
	select {
	case msg := <-attached:
		if msg != "" {
			os.Remove(t.out)
			return nil, fmt.Errorf("testbed: %s: strace did not attach: %s", n.Name, msg)
		}
	case <-time.After(10 * time.Second):
		_ = t.cmd.Process.Kill()
		os.Remove(t.out)
		return nil, fmt.Errorf("testbed: %s: strace did not attach within 10s", n.Name)
	}
	return t, nil
}

// Stop waits until the listener has no children left (every connection
// that was open has ended), detaches and returns what was seen. A
// connection still open after wait is reported as an error.
func (t *Tracer) Stop(wait time.Duration) (Procs, error) {
	if os.Getenv("TESTBED_TRACE_KEEP") == "" {
		defer os.Remove(t.out)
	}
	deadline := time.Now().Add(wait)
	var open []int
	for {
		open = ChildrenOf(t.node.cmd.Process.Pid)
		if len(open) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = t.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-t.done:
	case <-time.After(10 * time.Second):
		_ = t.cmd.Process.Kill()
		<-t.done
	}
	b, err := os.ReadFile(t.out)
	if err != nil {
		return nil, err
	}
	ps := parseStrace(string(b), t.node.cmd.Process.Pid)
	if len(open) > 0 {
		return ps, fmt.Errorf("testbed: %s: %d connection(s) still open after %s: %v", t.node.Name, len(open), wait, open)
	}
	return ps, nil
}

var (
	straceLine  = regexp.MustCompile(`^(\d+) +(.*)$`)
	straceChild = regexp.MustCompile(`^(?:clone3?|v?fork)\(.*\)\s+= (\d+)$`)
	straceExec  = regexp.MustCompile(`^execve\("[^"]*", \[(.*)\], .*\)\s+= 0$`)
	straceArg   = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)
)

// parseStrace reads strace -f output: parents from clone/fork results,
// argv from successful execve calls.
func parseStrace(out string, listener int) Procs {
	procs := map[int]*Proc{}
	get := func(pid int) *Proc {
		p := procs[pid]
		if p == nil {
			p = &Proc{Pid: pid}
			procs[pid] = p
		}
		return p
	}
	pending := map[int]string{} // pid -> an unfinished call's line
	threads := map[int]bool{}   // CLONE_THREAD children: not processes
	for _, line := range strings.Split(out, "\n") {
		m := straceLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		rest := m[2]
		if strings.HasSuffix(rest, "<unfinished ...>") {
			pending[pid] = strings.TrimSuffix(rest, " <unfinished ...>")
			continue
		}
		if strings.HasPrefix(rest, "<... ") {
			if i := strings.Index(rest, " resumed>"); i > 0 {
				rest = pending[pid] + rest[i+len(" resumed>"):]
				delete(pending, pid)
			}
		}
		if c := straceChild.FindStringSubmatch(rest); c != nil {
			child, _ := strconv.Atoi(c[1])
			if strings.Contains(rest, "CLONE_THREAD") {
				threads[child] = true
				delete(procs, child)
				continue
			}
			get(child).Parent = pid
			continue
		}
		if e := straceExec.FindStringSubmatch(rest); e != nil {
			var argv []string
			for _, a := range straceArg.FindAllStringSubmatch(e[1], -1) {
				s, err := strconv.Unquote(`"` + a[1] + `"`)
				if err != nil {
					s = a[1]
				}
				argv = append(argv, s)
			}
			p := get(pid)
			p.Execs = append(p.Execs, argv)
			continue
		}
		if pid != listener && !threads[pid] {
			get(pid) // an exit line or another call: the process exists
		}
	}
	delete(procs, listener)
	out2 := make(Procs, 0, len(procs))
	for _, p := range procs {
		out2 = append(out2, *p)
	}
	sort.Slice(out2, func(i, j int) bool { return out2[i].Pid < out2[j].Pid })
	return out2
}

// ChildCPU is the CPU time (user+system) of the listener's children that
// it has reaped so far: every connection's processes once the connection
// ended (each sshd, shell and sudo waits for its children, so their time
// is summed up the tree).
func (n *Node) ChildCPU() (time.Duration, error) {
	if n.cmd == nil || n.cmd.Process == nil {
		return 0, fmt.Errorf("testbed: %s: sshd is not running", n.Name)
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(n.cmd.Process.Pid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	// After ")": state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14).
	if len(f) < 15 {
		return 0, fmt.Errorf("testbed: %s: short /proc stat", n.Name)
	}
	cu, _ := strconv.ParseInt(f[13], 10, 64)
	cs, _ := strconv.ParseInt(f[14], 10, 64)
	return time.Duration(cu+cs) * time.Second / clkTck, nil
}

// clkTck is USER_HZ, the unit of /proc/PID/stat times: 100 on Linux.
const clkTck = 100

// WaitIdle waits until n's listener has no connection left, for up to
// wait; it reports whether it has none.
func (n *Node) WaitIdle(wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for {
		if n.cmd == nil || n.cmd.Process == nil || len(ChildrenOf(n.cmd.Process.Pid)) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
