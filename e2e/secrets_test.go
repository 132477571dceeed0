package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestSensitiveDockerEnv is issue #31's "a docker env token in every
// plan", with the real docker provider on this machine's Docker Engine: a
// sensitive variable in a container's env reaches the container, and no
// command prints it (plan, saved plan files through show, show -json and
// apply, show, state show, the -json stream, a replacement when the token
// changes, a failing container's log tail that repeats it, destroy, and
// debug logs), while the env's other key still shows.
func TestSensitiveDockerEnv(t *testing.T) {
	requireParts(t)
	const (
		tag  = "sparkform-e2e-secrets/serve:1"
		name = "sparkform-e2e-secrets"
		tok1 = "hf_e2eSecretTokenOne"
		tok2 = "hf_e2eSecretTokenTwo"
	)
	buildImage(t, tag)
	dockerRm(name)
	t.Cleanup(func() { dockerRm(name) })

	work := t.TempDir()
	writeFiles(t, work, map[string]string{"main.sf.hcl": fmt.Sprintf(`
variable "hf_token" {
  type      = string
  sensitive = true
}
variable "fail" {
  type    = bool
  default = false
}
node "local" {
  transport = "local"
}
resource "docker_container" "serve" {
  node         = node.local
  name         = %q
  image        = %q
  # The container repeats its environment in its log (a log tail is part
  # of a failed wait's error message).
  entrypoint   = ["/bin/busybox", "sh", "-c", var.fail ? "echo token=$HF_TOKEN mode=$MODE; exit 3" : "echo token=$HF_TOKEN mode=$MODE; echo ready; exec /bin/busybox sleep 600"]
  env          = { HF_TOKEN = var.hf_token, MODE = "x" }
  stop_timeout = 1
  wait {
    log_line = "^ready"
    timeout  = "30s"
  }
}
output "mode" {
  value = docker_container.serve.env["MODE"]
}
`, name, tag)})
	base := append(os.Environ(), "NO_COLOR=1", "TMPDIR="+t.TempDir(), "SPARKFORM_LOG=debug")
	sf := &cli{t: t, dir: work, env: append(base, "SPARKFORM_VAR_hf_token="+tok1)}
	// secret is what no output may hold: either token, or a part of one.
	secret := regexp.MustCompile(`hf_e2e|SecretToken`)
	check := func(what string, r result, want ...string) {
		t.Helper()
		for _, s := range []string{r.stdout, r.stderr} {
			if m := secret.FindString(s); m != "" {
				t.Errorf("%s prints the token (%q):\n%s", what, m, r)
			}
		}
		for _, w := range want {
			if !regexp.MustCompile(w).MatchString(r.stdout + r.stderr) {
				t.Errorf("%s: no match for %q in:\n%s", what, w, r)
			}
		}
	}
	const (
		hiddenLine = `HF_TOKEN = \(sensitive value\)`
		modeLine   = `MODE     = "x"`
	)

	plan := filepath.Join(work, "p.bin")
	check("plan -out", sf.must(0, "plan", "-out", plan), hiddenLine, modeLine)
	check("show PLAN", sf.must(0, "show", plan), hiddenLine, modeLine)
	check("show -json PLAN", sf.must(0, "show", "-json", plan), `"HF_TOKEN":\s*null`, `"MODE":\s*"x"`, `"after_sensitive"`, `"HF_TOKEN":\s*true`)
	check("apply PLAN", sf.must(0, "apply", plan), `mode = "x"`)

	// The token did reach the container.
	env := docker(t, "inspect", "-f", "{{range .Config.Env}}{{println .}}{{end}}", name)
	wantIn(t, "container env", env, "HF_TOKEN="+tok1, "MODE=x")

	check("show", sf.must(0, "show"), hiddenLine, modeLine)
	check("show -json", sf.must(0, "show", "-json"), `"sensitive_values"`, `"HF_TOKEN":\s*true`, `"MODE":\s*"x"`)
	check("state show", sf.must(0, "state", "show", "docker_container.serve"), hiddenLine, modeLine)
	check("plan (no changes)", sf.must(0, "plan"), `No changes`)

	// A new token: the container is replaced, the diff says env changed
	// and shows neither token.
	sf2 := &cli{t: t, dir: work, env: append(base, "SPARKFORM_VAR_hf_token="+tok2)}
	plan2 := filepath.Join(work, "p2.bin")
	check("plan (token changed)", sf2.must(0, "plan", "-out", plan2), `must be replaced`, `~ env\s+=`, `~ HF_TOKEN = \(sensitive value\)`, modeLine, `forces replacement`)
	check("show PLAN (token changed)", sf2.must(0, "show", plan2), `~ HF_TOKEN = \(sensitive value\)`)
	check("plan -json (token changed)", sf2.must(0, "plan", "-json"), `"type":\s*"planned_change"`)
	check("apply -json PLAN", sf2.must(0, "apply", "-json", plan2), `"type":\s*"apply_complete"`)
	wantIn(t, "container env", docker(t, "inspect", "-f", "{{range .Config.Env}}{{println .}}{{end}}", name), "HF_TOKEN="+tok2)

	// A container that fails before it is ready: the error carries its
	// log tail, where the token is redacted.
	r := sf2.must(1, "apply", "-auto-approve", "-var", "fail=true")
	check("failed apply", r, `mode=x`, `token=\(sensitive value\)`)

	r = sf2.must(1, "apply", "-auto-approve", "-json", "-var", "fail=true")
	check("failed apply -json", r, `mode=x`, `token=\(sensitive value\)`)

	check("destroy", sf2.must(0, "destroy", "-auto-approve"), `Destroy complete`)
	if id, err := dockerInspect(name); err == nil {
		t.Errorf("container %s left behind: %s", name, id)
	}
}
