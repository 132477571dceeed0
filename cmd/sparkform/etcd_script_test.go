package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/sparkform/sparkform/internal/etcdtest"
)

// etcd [tls]: start a real three-member etcd cluster on loopback and
// export ETCD_ENDPOINTS (all members, comma-separated) and ETCD_EP0..2.
// With tls: client URLs are https with client-certificate auth; the CA,
// client certificate and key are exported as SPARKFORM_ETCD_CACERT/CERT/KEY
// and a certificate from another CA as OTHER_CERT/OTHER_KEY.
func cmdEtcd(ts *testscript.TestScript, neg bool, args []string) {
	if _, err := etcdtest.Binary(); err != nil {
		ts.Fatalf("%v", err) // scripts that need etcd fail without it, CI or not
	}
	opts := etcdtest.Options{}
	if len(args) == 1 && args[0] == "tls" {
		certs, err := etcdtest.WriteCerts(filepath.Join(ts.Getenv("WORK"), "certs"))
		ts.Check(err)
		opts.TLS = &certs.TLSFiles
		ts.Setenv("SPARKFORM_ETCD_CACERT", certs.CA)
		ts.Setenv("SPARKFORM_ETCD_CERT", certs.ClientCert)
		ts.Setenv("SPARKFORM_ETCD_KEY", certs.ClientKey)
		ts.Setenv("OTHER_CERT", certs.OtherClientCert)
		ts.Setenv("OTHER_KEY", certs.OtherClientKey)
	}
	c, err := etcdtest.Start(opts)
	if err != nil {
		ts.Fatalf("etcd: %v", err)
	}
	ts.Defer(c.Stop)
	clusters.Store(ts, c)
	ts.Defer(func() { clusters.Delete(ts) })
	ts.Setenv("ETCD_ENDPOINTS", strings.Join(c.Endpoints(), ","))
	for i, e := range c.Endpoints() {
		ts.Setenv(fmt.Sprintf("ETCD_EP%d", i), e)
	}
}

// clusters holds each script's cluster.
var clusters sync.Map

func cluster(ts *testscript.TestScript) *etcdtest.Cluster {
	v, ok := clusters.Load(ts)
	if !ok {
		ts.Fatalf("no etcd cluster: run `etcd` first")
	}
	return v.(*etcdtest.Cluster)
}

// etcdstop leader|N: kill the leader (or member N); with leader, export
// ETCD_STOPPED (its index) and ETCD_LIVE (the other endpoints).
func cmdEtcdStop(ts *testscript.TestScript, neg bool, args []string) {
	c := cluster(ts)
	if len(args) != 1 {
		ts.Fatalf("usage: etcdstop leader|N")
	}
	i, err := strconv.Atoi(args[0])
	if args[0] == "leader" {
		i, err = c.Leader()
	}
	ts.Check(err)
	c.StopMember(i)
	var live []string
	for j, m := range c.Members {
		if j != i {
			live = append(live, m.ClientURL)
		}
	}
	ts.Setenv("ETCD_STOPPED", strconv.Itoa(i))
	ts.Setenv("ETCD_LIVE", strings.Join(live, ","))
	ts.Logf("stopped etcd member m%d", i)
}

// etcdstart N: restart member N and wait for a healthy cluster.
func cmdEtcdStart(ts *testscript.TestScript, neg bool, args []string) {
	c := cluster(ts)
	i, err := strconv.Atoi(args[0])
	ts.Check(err)
	ts.Check(c.RestartMember(i))
	ts.Check(c.WaitHealthy(30 * time.Second))
}

// etcdhealthy: wait until the running members agree on a leader.
func cmdEtcdHealthy(ts *testscript.TestScript, neg bool, args []string) {
	ts.Check(cluster(ts).WaitHealthy(30 * time.Second))
}
