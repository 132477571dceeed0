package etcdstore

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"time"
)

// Defaults.
const (
	DefaultLockTTL        = 15 * time.Second
	DefaultDialTimeout    = 5 * time.Second
	DefaultRequestTimeout = 10 * time.Second
)

// Environment variables read by ConfigFromEnv: TLS files and credentials
// never appear in configuration, state or plan files.
const (
	EnvCACert   = "SPARKFORM_ETCD_CACERT"
	EnvCert     = "SPARKFORM_ETCD_CERT"
	EnvKey      = "SPARKFORM_ETCD_KEY"
	EnvUser     = "SPARKFORM_ETCD_USERNAME"
	EnvPassword = "SPARKFORM_ETCD_PASSWORD"
)

// Config says where the state is and how to reach it.
type Config struct {
	Endpoints []string // host:port or http(s)://host:port
	Prefix    string   // key prefix, e.g. "sparkform/dsv41"
	// LockTTL is the writer lock's lease TTL: how long after its holder
	// dies (or is cut off) the lock frees itself. Default 15 s.
	LockTTL        time.Duration
	DialTimeout    time.Duration
	RequestTimeout time.Duration // per request; a cut-off member fails within it

	TLS                *tls.Config // nil: plain http
	Username, Password string
}

// ConfigFromEnv fills TLS and credentials from the SPARKFORM_ETCD_*
// variables: a CA bundle, and a client certificate and key (both or
// neither). getenv is os.Getenv in the CLI.
func (c *Config) ConfigFromEnv(getenv func(string) string) error {
	ca, cert, key := getenv(EnvCACert), getenv(EnvCert), getenv(EnvKey)
	if (cert == "") != (key == "") {
		return fmt.Errorf("etcd backend: set both %s and %s for a client certificate, or neither", EnvCert, EnvKey)
	}
	if ca != "" || cert != "" {
		t := &tls.Config{MinVersion: tls.VersionTLS12}
		if ca != "" {
			pem, err := os.ReadFile(ca)
			if err != nil {
				return fmt.Errorf("etcd backend: %s: %w", EnvCACert, err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return fmt.Errorf("etcd backend: %s=%s holds no PEM certificate", EnvCACert, ca)
			}
			t.RootCAs = pool
		}
		if cert != "" {
			kp, err := tls.LoadX509KeyPair(cert, key)
			if err != nil {
				return fmt.Errorf("etcd backend: client certificate (%s, %s): %w", EnvCert, EnvKey, err)
			}
			t.Certificates = []tls.Certificate{kp}
		}
		c.TLS = t
	}
	c.Username, c.Password = getenv(EnvUser), getenv(EnvPassword)
	if c.Password != "" && c.Username == "" {
		return fmt.Errorf("etcd backend: %s is set but %s is not", EnvPassword, EnvUser)
	}
	return nil
}

func (c *Config) check() error {
	if len(c.Endpoints) == 0 {
		return fmt.Errorf("etcd backend: no endpoints")
	}
	p := strings.Trim(c.Prefix, "/")
	if p == "" {
		return fmt.Errorf("etcd backend: empty prefix: give each state its own prefix, e.g. \"sparkform/CLUSTER\"")
	}
	if strings.ContainsRune(p, 0) {
		return fmt.Errorf("etcd backend: prefix %q holds a NUL byte", c.Prefix)
	}
	c.Prefix = p
	if c.LockTTL == 0 {
		c.LockTTL = DefaultLockTTL
	}
	if c.LockTTL < 2*time.Second {
		return fmt.Errorf("etcd backend: lock_ttl %s is below 2s (etcd's lease granularity is a second)", c.LockTTL)
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	eps := make([]string, len(c.Endpoints))
	for i, e := range c.Endpoints {
		if !strings.Contains(e, "://") {
			scheme := "http://"
			if c.TLS != nil {
				scheme = "https://"
			}
			e = scheme + e
		}
		eps[i] = e
	}
	c.Endpoints = eps
	return nil
}
