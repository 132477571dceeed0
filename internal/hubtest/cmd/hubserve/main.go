// Command hubserve serves one generated repository with package hubtest's
// fake huggingface.co (API, resolve, CDN redirect) until SIGTERM or SIGINT,
// for benchmarks and manual runs. Once the listeners accept connections it
// prints shell `export` lines:
//
//	HF_ENDPOINT      the hub endpoint
//	HUBTEST_CDN      the CDN listener
//	HUBTEST_REPO     repo id;  HUBTEST_TYPE model|dataset
//	HUBTEST_COMMIT   the commit "main" points at
//	HUBTEST_FILES    file count;  HUBTEST_BYTES total bytes
//	HUBTEST_STATS    URL of the counters as JSON (bytes per path, requests)
//
// The default shape is the bench snapshot: 2 GiB in 40 LFS files
// plus 1,000 small regular files in nested folders.
//
//	eval "$(hubserve -lfs-total 2GiB -lfs-count 40 -small-count 1000 -env-file /tmp/hub.env &)"
//	hubserve -file model.safetensors:4GiB:lfs -file config.json:700 -urls /tmp/urls.txt
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/sparkform/sparkform/internal/hubtest"
	"github.com/sparkform/sparkform/providers/node"
)

type fileFlags []hubtest.FileSpec

func (f *fileFlags) String() string { return fmt.Sprint(len(*f), " files") }

func (f *fileFlags) Set(v string) error {
	parts := strings.Split(v, ":")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" {
		return fmt.Errorf("want PATH:SIZE[:lfs], got %q", v)
	}
	n, err := parseSize(parts[1])
	if err != nil {
		return err
	}
	spec := hubtest.FileSpec{Path: parts[0], Size: n}
	if len(parts) == 3 {
		if parts[2] != "lfs" {
			return fmt.Errorf("want PATH:SIZE[:lfs], got %q", v)
		}
		spec.LFS = true
	}
	*f = append(*f, spec)
	return nil
}

type sizeFlag int64

func (s *sizeFlag) String() string { return strconv.FormatInt(int64(*s), 10) }
func (s *sizeFlag) Set(v string) error {
	n, err := parseSize(v)
	*s = sizeFlag(n)
	return err
}

// parseSize reads "123", "4KiB", "2GiB", "500MB" (KiB/MiB/GiB binary,
// KB/MB/GB decimal).
func parseSize(v string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}} {
		if strings.HasSuffix(v, u.suffix) {
			v, mult = strings.TrimSuffix(v, u.suffix), u.m
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q: want a number of bytes with an optional KiB/MiB/GiB/KB/MB/GB suffix", v)
	}
	return n * mult, nil
}

func main() {
	var files fileFlags
	lfsTotal, smallSize := sizeFlag(2<<30), sizeFlag(4<<10)
	repoID := flag.String("repo", "bench/model", "repository id ORG/NAME")
	typ := flag.String("type", "model", "repository type: model or dataset")
	seed := flag.Int64("seed", 1, "content seed (same seed and shape, same bytes and commit)")
	lfsCount := flag.Int("lfs-count", 40, "number of LFS files sharing -lfs-total (model-NNNNN-of-NNNNN.safetensors)")
	flag.Var(&lfsTotal, "lfs-total", "total size of the LFS files (e.g. 2GiB)")
	smallCount := flag.Int("small-count", 1000, "number of small regular files, 100 per folder (extra/dNN/fNNNN.json)")
	flag.Var(&smallSize, "small-size", "size of each small file")
	flag.Var(&files, "file", "an extra file PATH:SIZE[:lfs] (repeatable; with only -file flags, set -lfs-count 0 -small-count 0)")
	listen := flag.String("listen", "127.0.0.1", "IP address both listeners bind (free ports)")
	token := flag.String("token-file", "", "require the token in this file (Authorization: Bearer) on the hub; the token is never printed")
	rate := sizeFlag(0)
	flag.Var(&rate, "throttle", "limit each response to this many bytes per second (0: none)")
	envFile := flag.String("env-file", "", "also write the export lines to this file (once the server accepts connections)")
	urls := flag.String("urls", "", "write the resolve URL of every file (by commit), one per line, to this file")
	flag.Parse()

	if *typ != "model" && *typ != "dataset" {
		fail(fmt.Errorf("-type %q: want model or dataset", *typ))
	}
	spec := append(shape(*lfsCount, int64(lfsTotal), *smallCount, int64(smallSize)), files...)
	if len(spec) == 0 {
		fail(fmt.Errorf("the repository has no files: set -lfs-count, -small-count or -file"))
	}
	repo := hubtest.GenRepo(*repoID, *seed, spec...)
	repo.Type = *typ
	s, err := hubtest.StartAt(*listen, repo)
	if err != nil {
		fail(err)
	}
	defer s.Close()
	if *token != "" {
		b, err := os.ReadFile(*token)
		if err != nil {
			fail(err)
		}
		s.SetToken(strings.TrimSpace(string(b)))
	}
	s.Throttle(int64(rate))
	c := repo.Main()
	prefix := s.URL + "/"
	if *typ == "dataset" {
		prefix += "datasets/"
	}
	if *urls != "" {
		var b strings.Builder
		for _, f := range c.Files {
			b.WriteString(prefix + repo.ID + "/resolve/" + c.SHA + "/" + f.Path + "\n")
		}
		if err := os.WriteFile(*urls, []byte(b.String()), 0o600); err != nil {
			fail(err)
		}
	}
	env := [][2]string{
		{"HF_ENDPOINT", s.URL},
		{"HUBTEST_CDN", s.CDNURL},
		{"HUBTEST_REPO", repo.ID},
		{"HUBTEST_TYPE", *typ},
		{"HUBTEST_COMMIT", c.SHA},
		{"HUBTEST_FILES", strconv.Itoa(len(c.Files))},
		{"HUBTEST_BYTES", strconv.FormatInt(c.TotalSize(), 10)},
		{"HUBTEST_STATS", s.URL + "/_hubtest/stats"},
	}
	var lines string
	for _, kv := range env {
		lines += "export " + kv[0] + "=" + node.Quote(kv[1]) + "\n"
	}
	if *envFile != "" {
		if err := os.WriteFile(*envFile, []byte(lines), 0o600); err != nil {
			fail(err)
		}
	}
	fmt.Print(lines)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	st := s.Stats()
	fmt.Fprintf(os.Stderr, "hubserve: served %d bytes; requests %v\n", st.TotalBytes, st.Requests)
}

// shape is the generated file list: lfsCount LFS files sharing lfsTotal
// (the last one takes the remainder) and smallCount regular files of
// smallSize, 100 per folder.
func shape(lfsCount int, lfsTotal int64, smallCount int, smallSize int64) []hubtest.FileSpec {
	var spec []hubtest.FileSpec
	if lfsCount > 0 {
		each := lfsTotal / int64(lfsCount)
		for i := 0; i < lfsCount; i++ {
			size := each
			if i == lfsCount-1 {
				size = lfsTotal - each*int64(lfsCount-1)
			}
			spec = append(spec, hubtest.FileSpec{
				Path: fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, lfsCount),
				Size: size, LFS: true,
			})
		}
	}
	for i := 0; i < smallCount; i++ {
		spec = append(spec, hubtest.FileSpec{Path: fmt.Sprintf("extra/d%02d/f%04d.json", i/100, i), Size: smallSize})
	}
	return spec
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "hubserve:", err)
	os.Exit(1)
}
