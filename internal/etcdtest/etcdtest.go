// Package etcdtest starts real etcd clusters on loopback for tests and
// benchmarks: three members by default, each its own etcd process (Debian's
// etcd-server, /usr/bin/etcd, or $ETCD_BIN) with its own temporary data
// dir, on free ports. Members can be stopped and restarted (leader loss,
// partitions); Stop removes everything.
package etcdtest

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Binary is the etcd server used: $ETCD_BIN, else etcd on PATH.
func Binary() (string, error) {
	if b := os.Getenv("ETCD_BIN"); b != "" {
		return b, nil
	}
	b, err := exec.LookPath("etcd")
	if err != nil {
		return "", fmt.Errorf("no etcd server binary (install Debian's etcd-server; .ci/run does, or set ETCD_BIN): %w", err)
	}
	return b, nil
}

// Options for Start.
type Options struct {
	Members int // default 3
	// TLS, when set, makes every client URL https with client-certificate
	// authentication: the server presents ServerCert/ServerKey and trusts
	// client certificates signed by CA (all PEM files).
	TLS *TLSFiles
}

// TLSFiles are PEM files for a TLS cluster (see NewCA).
type TLSFiles struct{ CA, ServerCert, ServerKey string }

// Member is one etcd process.
type Member struct {
	Name             string
	ClientURL        string
	PeerURL          string
	MetricsURL       string
	dir              string
	cmd              *exec.Cmd
	exited           chan struct{}
	log              *os.File
	cluster          *Cluster
	started, stopped bool
}

// Cluster is a running cluster.
type Cluster struct {
	Members []*Member
	dir     string
	opts    Options
	initial string
}

// Start starts the cluster and waits until it has a leader.
func Start(opts Options) (*Cluster, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	if opts.Members == 0 {
		opts.Members = 3
	}
	dir, err := os.MkdirTemp("", "sparkform-etcd-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, opts: opts}
	ports, err := freePorts(3 * opts.Members)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	scheme := "http"
	if opts.TLS != nil {
		scheme = "https"
	}
	var initial []string
	for i := 0; i < opts.Members; i++ {
		m := &Member{
			Name:       fmt.Sprintf("m%d", i),
			ClientURL:  fmt.Sprintf("%s://127.0.0.1:%d", scheme, ports[3*i]),
			PeerURL:    fmt.Sprintf("http://127.0.0.1:%d", ports[3*i+1]),
			MetricsURL: fmt.Sprintf("http://127.0.0.1:%d", ports[3*i+2]),
			dir:        filepath.Join(dir, fmt.Sprintf("m%d", i)),
			cluster:    c,
		}
		initial = append(initial, m.Name+"="+m.PeerURL)
		c.Members = append(c.Members, m)
	}
	c.initial = strings.Join(initial, ",")
	for _, m := range c.Members {
		if err := m.start(bin); err != nil {
			c.Stop()
			return nil, err
		}
	}
	if err := c.WaitHealthy(30 * time.Second); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var out []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

func (m *Member) start(bin string) error {
	state := "new"
	if m.started {
		state = "existing"
	}
	args := []string{
		"--name", m.Name, "--data-dir", m.dir,
		"--listen-client-urls", m.ClientURL, "--advertise-client-urls", m.ClientURL,
		"--listen-peer-urls", m.PeerURL, "--initial-advertise-peer-urls", m.PeerURL,
		"--listen-metrics-urls", m.MetricsURL,
		"--initial-cluster", m.cluster.initial, "--initial-cluster-state", state,
		"--initial-cluster-token", "sparkform-test",
		// Quick elections keep leader-loss tests short.
		"--heartbeat-interval", "100", "--election-timeout", "1000",
		"--logger", "zap", "--log-level", "warn",
	}
	if t := m.cluster.opts.TLS; t != nil {
		args = append(args, "--cert-file", t.ServerCert, "--key-file", t.ServerKey,
			"--trusted-ca-file", t.CA, "--client-cert-auth")
	}
	log, err := os.OpenFile(m.dir+".log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start etcd member %s: %w", m.Name, err)
	}
	m.cmd, m.log, m.started, m.stopped = cmd, log, true, false
	m.exited = make(chan struct{})
	go func() { cmd.Wait(); close(m.exited) }()
	return nil
}

// Endpoints are the client URLs of every member.
func (c *Cluster) Endpoints() []string {
	var out []string
	for _, m := range c.Members {
		out = append(out, m.ClientURL)
	}
	return out
}

// StopMember kills member i (SIGKILL: a crash, or a cut cable).
func (c *Cluster) StopMember(i int) {
	m := c.Members[i]
	if m.stopped || m.cmd == nil {
		return
	}
	m.cmd.Process.Kill()
	<-m.exited
	m.log.Close()
	m.stopped = true
}

// RestartMember starts a stopped member again with its data.
func (c *Cluster) RestartMember(i int) error {
	bin, err := Binary()
	if err != nil {
		return err
	}
	return c.Members[i].start(bin)
}

// Stop kills every member and removes the data dirs.
func (c *Cluster) Stop() {
	for i := range c.Members {
		c.StopMember(i)
	}
	os.RemoveAll(c.dir)
}

// Logs returns the members' logs (for failure messages).
func (c *Cluster) Logs() string {
	var b strings.Builder
	for _, m := range c.Members {
		data, _ := os.ReadFile(m.dir + ".log")
		fmt.Fprintf(&b, "--- %s ---\n%s", m.Name, data)
	}
	return b.String()
}

// Client returns a client of the running members (tls for a TLS cluster).
func (c *Cluster) Client(tlsCfg *tls.Config) (*clientv3.Client, error) {
	var eps []string
	for _, m := range c.Members {
		if !m.stopped {
			eps = append(eps, m.ClientURL)
		}
	}
	return clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, TLS: tlsCfg, Logger: zap.NewNop()})
}

// WaitHealthy waits until every running member answers and agrees on a
// leader.
func (c *Cluster) WaitHealthy(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var last error
	for time.Now().Before(deadline) {
		if _, err := c.Leader(); err == nil {
			return nil
		} else {
			last = err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("etcd cluster not healthy within %s: %v\n%s", limit, last, c.Logs())
}

// Leader returns the index of the leader member, asking every running
// member over its metrics port (/metrics: etcd_server_is_leader).
func (c *Cluster) Leader() (int, error) {
	leader := -1
	for i, m := range c.Members {
		if m.stopped {
			continue
		}
		v, err := m.Metric("etcd_server_has_leader")
		if err != nil {
			return -1, err
		}
		if v != 1 {
			return -1, fmt.Errorf("member %s has no leader", m.Name)
		}
		if v, _ := m.Metric("etcd_server_is_leader"); v == 1 {
			leader = i
		}
	}
	if leader < 0 {
		return -1, fmt.Errorf("no member is leader")
	}
	return leader, nil
}

// Metric reads one unlabelled metric from the member's /metrics.
func (m *Member) Metric(name string) (float64, error) {
	ms, err := m.metrics()
	if err != nil {
		return 0, err
	}
	v, ok := ms[name]
	if !ok {
		return 0, fmt.Errorf("member %s: no metric %s", m.Name, name)
	}
	return v, nil
}

func (m *Member) metrics() (map[string]float64, error) {
	cl := http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get(m.MetricsURL + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err == nil {
			out[name] = f
		}
	}
	return out, sc.Err()
}

// RangeTotal is the number of range operations the running members have
// served (etcd_debugging_mvcc_range_total, summed): reads, and the reads
// of transaction conditions.
func (c *Cluster) RangeTotal() (float64, error) {
	var sum float64
	for _, m := range c.Members {
		if m.stopped {
			continue
		}
		v, err := m.Metric("etcd_debugging_mvcc_range_total")
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

// Ctx is a short context for test calls.
func Ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}
