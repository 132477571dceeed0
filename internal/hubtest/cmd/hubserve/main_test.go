package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sparkform/sparkform/internal/hubtest"
)

// The test binary runs main when asked, so the command runs as a real
// process without a separate build.
func TestMain(m *testing.M) {
	if os.Getenv("HUBSERVE_RUN_MAIN") == "1" {
		os.Args = append([]string{"hubserve"}, strings.Fields(os.Getenv("HUBSERVE_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"123", 123, true}, {"4KiB", 4096, true}, {"2GiB", 2 << 30, true}, {"5MB", 5e6, true},
		{"7B", 7, true}, {"-1", 0, false}, {"x", 0, false}, {"1.5GiB", 0, false},
	} {
		got, err := parseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestShape(t *testing.T) {
	spec := shape(3, 10, 250, 5)
	var lfs, small, total int64
	for _, s := range spec {
		if s.LFS {
			lfs++
			total += s.Size
		} else {
			small++
		}
	}
	if lfs != 3 || total != 10 || small != 250 || spec[len(spec)-1].Path != "extra/d02/f0249.json" {
		t.Errorf("shape: %d lfs files of %d bytes, %d small, last %s", lfs, total, small, spec[len(spec)-1].Path)
	}
}

// hubserve starts, prints its exports, serves the repo with the token, and
// reports its counters.
func TestHubserveProcess(t *testing.T) {
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokFile, []byte("hf_cmdtoken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	urls := filepath.Join(dir, "urls")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "HUBSERVE_RUN_MAIN=1",
		"HUBSERVE_ARGS=-repo org/m -lfs-count 2 -lfs-total 300KiB -small-count 3 -small-size 10 -file a/b.txt:5 -token-file "+tokFile+" -urls "+urls)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errFile, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	cmd.Stderr = errFile
	stderr := func() string { b, _ := os.ReadFile(errFile.Name()); return string(b) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	env := map[string]string{}
	sc := bufio.NewScanner(out)
	for len(env) < 8 && sc.Scan() {
		k, v, _ := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "=")
		env[k] = strings.Trim(v, "'")
	}
	if len(env) < 8 {
		t.Fatalf("exports: %v (stderr %s)", env, stderr())
	}
	if strings.Contains(stderr()+strings.Join(mapValues(env), " "), "hf_cmdtoken") {
		t.Error("the token was printed")
	}
	want := hubtest.GenRepo("org/m", 1, append(shape(2, 300<<10, 3, 10), hubtest.FileSpec{Path: "a/b.txt", Size: 5})...)
	if env["HUBTEST_COMMIT"] != want.Main().SHA || env["HUBTEST_FILES"] != "6" {
		t.Errorf("exports %v, want commit %s and 6 files", env, want.Main().SHA)
	}
	b, err := os.ReadFile(urls)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(b))
	if len(lines) != 6 {
		t.Fatalf("urls: %d lines", len(lines))
	}
	for _, u := range lines {
		req, _ := http.NewRequest("GET", u, nil)
		req.Header.Set("Authorization", "Bearer hf_cmdtoken")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		_, err = io.Copy(h, resp.Body)
		resp.Body.Close()
		path := strings.TrimPrefix(u, env["HF_ENDPOINT"]+"/org/m/resolve/"+want.Main().SHA+"/")
		if f := want.Main().File(path); err != nil || f == nil || hex.EncodeToString(h.Sum(nil)) != f.SHA256 {
			t.Errorf("%s: status %d, err %v, content differs from the generated file", u, resp.StatusCode, err)
		}
	}
	resp, err := http.Get(env["HUBTEST_STATS"])
	if err != nil {
		t.Fatal(err)
	}
	var st hubtest.Stats
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil || st.TotalBytes != want.Main().TotalSize() || st.Requests[hubtest.EndpointCDN] != 2 {
		t.Errorf("stats %+v (%v), want %d bytes and 2 CDN requests", st, err, want.Main().TotalSize())
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	if !strings.Contains(stderr(), "served") {
		t.Errorf("no summary on SIGTERM: %q", stderr())
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
