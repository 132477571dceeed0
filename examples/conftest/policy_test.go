// Package conftest_test runs policy/docker.rego, a conftest policy in the
// style people write for Terraform plans, over the plan documents of real
// sparkform runs (`sparkform show -json PLANFILE`) on this machine's Docker
// Engine, with Open Policy Agent's rego package (what conftest evaluates
// policies with: data.main.deny, the plan document as input). It is its
// own module so that OPA stays out of sparkform's build: `make test` runs
// it (cd examples/conftest && go test ./...).
package conftest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/rego"
)

// missing fails the test: a real part it drives (the Docker Engine, a
// sparkform build) is not here, and a policy test that cannot run proves
// nothing (.ci/run installs and starts every part).
func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Fatalf("missing: "+format, args...)
}

// deny evaluates the policy's deny rules on a plan document, as `conftest
// test` does, and returns the messages, sorted.
func deny(t *testing.T, doc []byte) []string {
	t.Helper()
	var input any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&input); err != nil {
		t.Fatalf("plan document: %v", err)
	}
	rs, err := rego.New(rego.Query("data.main.deny"), rego.Load([]string{"policy"}, nil), rego.Input(input)).Eval(context.Background())
	if err != nil {
		t.Fatalf("evaluating the policy: %v", err)
	}
	if len(rs) != 1 || len(rs[0].Expressions) != 1 {
		t.Fatalf("data.main.deny: %v", rs)
	}
	var msgs []string
	for _, m := range rs[0].Expressions[0].Value.([]any) {
		msgs = append(msgs, m.(string))
	}
	slices.Sort(msgs)
	return msgs
}

type bed struct {
	t        *testing.T
	bin, dir string
	env      []string
}

func (b *bed) sf(args ...string) []byte {
	b.t.Helper()
	cmd := exec.Command(b.bin, args...)
	cmd.Dir, cmd.Env = b.dir, b.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		b.t.Fatalf("sparkform %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.Bytes()
}

// plan writes config and returns the plan document of a plan of it.
func (b *bed) plan(config string) []byte {
	b.t.Helper()
	if err := os.WriteFile(filepath.Join(b.dir, "main.sf.hcl"), []byte(config), 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.sf("plan", "-out", "plan.bin")
	return b.sf("show", "-json", "plan.bin")
}

func config(containers ...string) string {
	s := "node \"local\" {\n  transport = \"local\"\n}\nresource \"sparkform_data\" \"tag\" {\n  input = \"v1\"\n}\n"
	return s + strings.Join(containers, "")
}

func container(name, image string) string {
	return fmt.Sprintf("resource \"docker_container\" %q {\n  node  = node.local\n  name  = %q\n  image = %q\n}\n", name, "sf-conftest-"+name+"-"+fmt.Sprint(os.Getpid()), image)
}

func TestPolicyOnRealPlans(t *testing.T) {
	if _, err := exec.LookPath("docker"); err != nil {
		missing(t, "the docker CLI: %v", err)
	}
	if out, err := exec.Command("docker", "info").CombinedOutput(); err != nil {
		missing(t, "the Docker Engine: %v\n%s", err, out)
	}
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		missing(t, "busybox-static at /bin/busybox: %v", err)
	}
	tmp := t.TempDir()
	b := &bed{t: t, bin: filepath.Join(tmp, "sparkform"), dir: filepath.Join(tmp, "work")}
	b.env = append(os.Environ(), "HOME="+tmp, "NO_COLOR=1")
	if bin := os.Getenv("SPARKFORM_BIN"); bin != "" {
		b.bin = bin // another build, e.g. an installed sparkform
	} else {
		build := exec.Command("go", "build", "-o", b.bin, "./cmd/sparkform")
		build.Dir = filepath.Join("..", "..")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building sparkform: %v\n%s", err, out)
		}
	}
	if err := os.MkdirAll(b.dir, 0o755); err != nil {
		t.Fatal(err)
	}

	// An image of its own: busybox-static FROM scratch, pinned by its id.
	ctx := filepath.Join(tmp, "image")
	if err := os.MkdirAll(ctx, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ctx, "busybox"), bb, 0o755); err != nil {
		t.Fatal(err)
	}
	dockerfile := "FROM scratch\nCOPY busybox /bin/busybox\nENV PATH=/bin\nENTRYPOINT [\"/bin/busybox\", \"sleep\", \"3600\"]\n"
	if err := os.WriteFile(filepath.Join(ctx, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	tag := fmt.Sprintf("sparkform-conftest/bb:%d", os.Getpid())
	dbuild := exec.Command("docker", "build", "-q", "-t", tag, ctx)
	dbuild.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	if out, err := dbuild.CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", tag).Run() })
	id, err := exec.Command("docker", "inspect", "-f", "{{.Id}}", tag).Output()
	if err != nil {
		t.Fatalf("docker inspect: %v", err)
	}
	pinned := strings.TrimSpace(string(id))
	t.Cleanup(func() {
		cmd := exec.Command(b.bin, "destroy", "-auto-approve")
		cmd.Dir, cmd.Env = b.dir, b.env
		_ = cmd.Run()
	})

	unpinnedMsg := regexp.QuoteMeta(`docker_container.tagged runs image "` + tag + `", which is not pinned by digest`)
	for _, step := range []struct {
		name   string
		config string
		apply  bool
		want   []string // regexps, one per message, in sorted order
	}{
		// Passes: a container pinned by its image id.
		{"create pinned", config(container("serve", pinned)), true, nil},
		// Fails: a container by tag alone, and one by a name@sha256 digest passes.
		{"create by tag", config(container("serve", pinned), container("tagged", tag),
			container("digest", "registry.example/bb@sha256:"+strings.Repeat("0", 64))), false,
			[]string{unpinnedMsg}},
		// Passes: only a sparkform_data changes.
		{"no container change", strings.Replace(config(container("serve", pinned)), `"v1"`, `"v2"`, 1), false, nil},
		// Fails: the serving container is replaced (its name changes).
		{"replace", strings.Replace(config(container("serve", pinned)), "sf-conftest-serve-", "sf-conftest-renamed-", 1), false,
			[]string{`^docker_container.serve would be destroyed \(actions \["delete", "create"\]\)`}},
		// Fails: the serving container is gone from the configuration.
		{"delete", config(), false,
			[]string{`^docker_container.serve would be destroyed \(actions \["delete"\]\)`}},
	} {
		doc := b.plan(step.config)
		got := deny(t, doc)
		ok := len(got) == len(step.want)
		for i := 0; ok && i < len(got); i++ {
			ok = regexp.MustCompile(step.want[i]).MatchString(got[i])
		}
		if !ok {
			t.Errorf("%s: deny = %q, want %q", step.name, got, step.want)
		}
		if step.apply {
			b.sf("apply", "plan.bin")
		}
	}
}
