package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The node block reads ssh_config as OpenSSH does, and what the block sets
// wins over it.
func TestDecodeNodeSSHConfig(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	me := currentUser()
	file, _ := filepath.Abs("testdata/ssh/config")
	k := func(n string) string { return filepath.Join(home, ".ssh", n) }
	bastion := Hop{Host: "203.0.113.7", Alias: "bastion", Port: 2200, User: "jump", IdentityFiles: []string{k("bastion")}, IdentitiesOnly: true}
	tests := []struct {
		name, src string
		want      NodeConfig
	}{
		{"alias with a jump", `host = "spark-01"`, NodeConfig{Transport: "ssh", Host: "192.168.100.11", HostAlias: "spark-01", Port: 2222, User: "kilork",
			IdentityFiles: []string{k("spark")}, KnownHosts: k("known_hosts_lab"), ProxyJump: []Hop{bastion}}},
		{"the block wins", `
host          = "spark-01"
port          = 22
user          = "root"
identity_file = "/keys/id"
known_hosts   = "/kh"
`, NodeConfig{Transport: "ssh", Host: "192.168.100.11", HostAlias: "spark-01", Port: 22, User: "root", IdentityFile: "/keys/id", KnownHosts: "/kh", ProxyJump: []Hop{bastion}}},
		{"a chain: the first hop's own jump, then the list", `host = "spark-02"`, NodeConfig{Transport: "ssh", Host: "192.168.100.12", HostAlias: "spark-02", Port: 2222, User: "kilork",
			IdentityFiles: []string{k("spark")}, KnownHosts: k("known_hosts_lab"),
			ProxyJump: []Hop{bastion, {Host: "10.1.0.1", Alias: "inner", Port: 22, User: me}, {Host: "10.1.0.2", Port: 22, User: "ops"}}}},
		{"not in the file", `host = "10.9.9.9"`, NodeConfig{Transport: "ssh", Host: "10.9.9.9", Port: 22, User: me, KnownHosts: k("known_hosts")}},
	}
	for _, tt := range tests {
		tt.want.SSHConfig, tt.want.Timeout = file, 15*time.Second
		got, diags := DecodeNode(body(t, tt.src+"\nssh_config = \""+file+"\"\n"), nil)
		if diags.HasErrors() {
			t.Errorf("%s: %s", tt.name, diags.Error())
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.name, got, tt.want)
		}
	}

	// "none" reads nothing; ~/.ssh/config is read when present.
	got, diags := DecodeNode(body(t, "host = \"spark-01\"\nssh_config = \"none\"\n"), nil)
	if diags.HasErrors() || got.Host != "spark-01" || len(got.ProxyJump) != 0 || got.SSHConfig != "none" {
		t.Errorf("ssh_config = none: %+v %s", got, diags.Error())
	}
	writeFile(t, k("config"), "Host s1\n  HostName 10.2.0.1\n  ProxyJump b\n")
	got, diags = DecodeNode(body(t, `host = "s1"`), nil)
	if diags.HasErrors() || got.Host != "10.2.0.1" || len(got.ProxyJump) != 1 || got.ProxyJump[0].Host != "b" || got.SSHConfig != k("config") {
		t.Errorf("default ~/.ssh/config: %+v %s", got, diags.Error())
	}
}

func TestDecodeNodeSSHConfigErrors(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	bad := filepath.Join(home, "bad")
	writeFile(t, bad, "Host x\n  Port nope\n")
	tests := []struct{ src, want string }{
		{`host = "x"` + "\nssh_config = \"" + filepath.Join(home, "missing") + "\"", `b.sf.hcl:2:14: error: Cannot use the ssh_config file: open ` + filepath.Join(home, "missing")},
		{`host = "x"` + "\nssh_config = \"" + bad + "\"", `b.sf.hcl:2:14: error: Cannot use the ssh_config file: ` + bad + `: Port "nope" for host x is not a number from 1 to 65535. Fix the file`},
	}
	for _, tt := range tests {
		_, diags := DecodeNode(body(t, tt.src), nil)
		if got := render(diags); !diags.HasErrors() || !strings.Contains(got, tt.want) {
			t.Errorf("%s:\n got %s\nwant %s", tt.src, got, tt.want)
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
