package sshconfig

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	cfg, err := Load("testdata/config", true)
	if err != nil {
		t.Fatal(err)
	}
	k := func(name string) string { return filepath.Join(home, ".ssh", name) }
	tests := []struct {
		alias string
		want  Host
	}{
		{"spark-01", Host{Alias: "spark-01", HostName: "192.168.100.11", Port: 2222, User: "kilork",
			IdentityFiles: []string{k("spark"), k("id_ed25519")}, IdentitiesOnly: true, KnownHostsFile: k("known_hosts_lab"),
			// bastion's own ProxyJump (a later "Host bastion") comes first
			Jumps: []Host{
				{Alias: "outer", HostName: "203.0.113.5", Port: 443, IdentityFiles: []string{k("id_ed25519")}},
				{Alias: "bastion", HostName: "bastion.example.com", User: "jump", IdentityFiles: []string{k("bastion"), k("id_ed25519")}, KnownHostsFile: k("known_hosts_lab")},
			}}},
		// A pattern and %h; no Port or User: left empty for the caller.
		{"gpu7", Host{Alias: "gpu7", HostName: "gpu7.lab.internal", IdentityFiles: []string{k("id_ed25519")},
			Jumps: []Host{
				// the first hop's own ProxyJump comes before it
				{Alias: "outer", HostName: "203.0.113.5", Port: 443, IdentityFiles: []string{k("id_ed25519")}},
				{Alias: "bastion", HostName: "bastion.example.com", User: "jump", IdentityFiles: []string{k("bastion"), k("id_ed25519")}, KnownHostsFile: k("known_hosts_lab")},
				// an inline hop: user and port given in the list
				{Alias: "10.0.0.9", HostName: "10.0.0.9", Port: 2200, User: "ops", IdentityFiles: []string{k("id_ed25519")}},
			}}},
		// ProxyJump none switches a pattern's jump off.
		{"gpu-direct", Host{Alias: "gpu-direct", HostName: "gpu-direct.lab.internal", IdentityFiles: []string{k("id_ed25519")}}},
		// Not in the file but for Host *: the name is the address.
		{"plain.example.org", Host{Alias: "plain.example.org", HostName: "plain.example.org", IdentityFiles: []string{k("id_ed25519")}}},
	}
	for _, tt := range tests {
		got, err := cfg.Resolve(tt.alias)
		if err != nil {
			t.Errorf("%s: %v", tt.alias, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.alias, got, tt.want)
		}
	}
}

func TestResolveErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "c")
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct{ name, config, alias, want string }{
		{"loop", "Host a\n  ProxyJump b\nHost b\n  ProxyJump a\n", "a", "longer than 8 hops"},
		{"bad port", "Host a\n  Port http\n", "a", `Port "http" for host a is not a number`},
		{"bad jump port", "Host a\n  ProxyJump b:99999\n", "a", `port "99999"`},
		{"syntax", "Host a\n  Match exec true\n", "a", "c:2:9: Match Exec is not supported"},
	}
	for _, tt := range tests {
		cfg, err := Load(write(tt.config), true)
		if err == nil {
			_, err = cfg.Resolve(tt.alias)
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
	if _, err := Load(filepath.Join(dir, "missing"), true); err == nil {
		t.Error("a missing file named on purpose must be an error")
	}
	cfg, err := Load(filepath.Join(dir, "missing"), false)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := cfg.Resolve("x"); h.HostName != "x" || h.Port != 0 || len(h.Jumps) != 0 {
		t.Errorf("no file: got %+v", h)
	}
}
