package node

import (
	"context"
	"strings"
	"testing"
)

// TestLocalRunCleanEnvironment: a command on the local node gets what an
// SSH session would (PATH, HOME, LANG, LC_*...) and what it asks for,
// never the CLI's own environment: etcd credentials, SPARKFORM_VAR_*,
// anything else exported.
func TestLocalRunCleanEnvironment(t *testing.T) {
	t.Setenv("SPARKFORM_ETCD_USERNAME", "etcd-user")
	t.Setenv("SPARKFORM_ETCD_PASSWORD", "etcd-pass")
	t.Setenv("SPARKFORM_VAR_token", "var-token")
	t.Setenv("SOME_SECRET", "x")
	t.Setenv("LC_TIME", "C")
	t.Setenv("PATH", "/usr/bin:/bin")
	for _, tc := range []struct {
		name string
		env  map[string]string
	}{
		{"no env", nil},
		{"with env", map[string]string{"FROM_RESOURCE": "yes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := NewLocal("local").Run(context.Background(), Cmd{Argv: []string{"env"}, Env: tc.env})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, line := range strings.Split(string(res.Stdout), "\n") {
				if k, v, ok := strings.Cut(line, "="); ok {
					got[k] = v
				}
			}
			for _, k := range []string{"SPARKFORM_ETCD_USERNAME", "SPARKFORM_ETCD_PASSWORD", "SPARKFORM_VAR_token", "SOME_SECRET"} {
				if _, ok := got[k]; ok {
					t.Errorf("the command sees %s", k)
				}
			}
			for k, v := range map[string]string{"PATH": "/usr/bin:/bin", "LC_TIME": "C"} {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
			if got["HOME"] == "" || got["USER"] == "" {
				t.Errorf("HOME %q, USER %q: want both set", got["HOME"], got["USER"])
			}
			for k, v := range tc.env {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

// TestSessionEnvDefaults: without PATH or HOME in sparkform's
// environment, a command still gets OpenSSH's default PATH and the user's
// home.
func TestSessionEnvDefaults(t *testing.T) {
	env := sessionEnv([]string{"SPARKFORM_ETCD_PASSWORD=p", "LANG=C.UTF-8", "LANG=dup"})
	joined := "\n" + strings.Join(env, "\n") + "\n"
	for _, want := range []string{"\nPATH=" + defaultPath + "\n", "\nLANG=C.UTF-8\n", "\nHOME="} {
		if !strings.Contains(joined, want) {
			t.Errorf("env %q lacks %q", env, want)
		}
	}
	if strings.Contains(joined, "SPARKFORM") || strings.Contains(joined, "dup") {
		t.Errorf("env %q", env)
	}
}
