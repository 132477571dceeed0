package state

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Run with -benchtime=10000x for the 10,000-instance figures:
//
//	go test -run '^$' -bench . -benchtime=10000x ./state/
//
// Each PutResource returns only when durable, so serial cost is one fsync'd
// commit per put; with 10 goroutines group commit shares each fsync.
func BenchmarkPutResource(b *testing.B) {
	for _, workers := range []int{1, 10} {
		b.Run(fmt.Sprintf("goroutines=%d", workers), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "state.db")
			s, err := Open(path, Options{})
			if err != nil {
				b.Fatal(err)
			}
			recs := make([]*Resource, b.N)
			for i := range recs {
				recs[i] = testResource(fmt.Sprintf(`sparkform_data.r["%06d"]`, i), "input")
			}
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := next.Add(1) - 1; i < int64(b.N); i = next.Add(1) - 1 {
						if err := s.PutResource(recs[i]); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			commits := s.commits.Load()
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(fi.Size()), "file-bytes")
			b.ReportMetric(float64(dataSize(b, path)), "used-bytes")
			b.ReportMetric(float64(b.N)/float64(commits), "puts/commit")
		})
	}
}

// prefill writes n instances in one transaction (setup only).
func prefill(tb testing.TB, s *BoltStore, n int) {
	batch := make([]*op, n)
	for i := range batch {
		fn, err := putResourceOp(testResource(fmt.Sprintf(`sparkform_data.r["%06d"]`, i), "input"))
		if err != nil {
			tb.Fatal(err)
		}
		batch[i] = &op{fn: fn}
	}
	for _, err := range runOps(s, batch) {
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkUpdateAtSize: one durable update in a state of N instances. Flat
// in N: a write touches O(log N) pages, never the whole state.
func BenchmarkUpdateAtSize(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			s, err := Open(filepath.Join(b.TempDir(), "state.db"), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			prefill(b, s, n)
			i := 0
			for b.Loop() {
				if err := s.PutResource(testResource(fmt.Sprintf(`sparkform_data.r["%06d"]`, i%n), "changed")); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkReadAll: Resources() of 10,000 instances, through a writer and
// through a read-only store (what `show` does).
func BenchmarkReadAll(b *testing.B) {
	const n = 10000
	path := filepath.Join(b.TempDir(), "state.db")
	s, err := Open(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	prefill(b, s, n)
	fi, _ := os.Stat(path)
	used := dataSize(b, path)
	r, err := OpenReadOnly(path)
	if err != nil {
		b.Fatal(err)
	}
	for name, st := range map[string]*BoltStore{"writer": s, "readonly": r} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				got, err := st.Resources()
				if err != nil || len(got) != n {
					b.Fatalf("%d resources, %v", len(got), err)
				}
			}
			b.ReportMetric(float64(fi.Size()), "file-bytes")
			b.ReportMetric(float64(used), "used-bytes")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/instance")
		})
	}
}

// writersBackToBack opens a state of 1,000 instances and starts 10
// goroutines rewriting them back to back. It returns the state's path,
// the count of writes done, and stop, which ends the writers and waits
// for them.
func writersBackToBack(b *testing.B) (string, *atomic.Int64, func()) {
	path := filepath.Join(b.TempDir(), "state.db")
	s, err := Open(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	prefill(b, s, 1000)
	done := make(chan struct{})
	var wg sync.WaitGroup
	writes := new(atomic.Int64)
	for w := 0; w < 10; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				if err := s.PutResource(testResource(fmt.Sprintf(`sparkform_data.r["%06d"]`, (w*97+i)%1000), fmt.Sprint(i))); err != nil {
					b.Error(err)
					return
				}
				writes.Add(1)
			}
		}()
	}
	return path, writes, func() { close(done); wg.Wait() }
}

// BenchmarkReadDuringWrites: a read-only Snapshot of 1,000 instances while
// 10 goroutines commit back to back (the worst case for a reader: the
// writer's flock is almost always held). Reports the worst read.
func BenchmarkReadDuringWrites(b *testing.B) {
	path, _, stop := writersBackToBack(b)
	r, err := OpenReadOnly(path)
	if err != nil {
		b.Fatal(err)
	}
	var worst time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := r.Snapshot(); err != nil {
			b.Fatal(err)
		}
		worst = max(worst, time.Since(start))
	}
	stop()
	b.ReportMetric(float64(worst.Microseconds()), "worst-µs")
}

// BenchmarkOpenReadDuringWrites: what a read command waits (OpenReadOnly,
// Snapshot, Close: two read transactions) while 10 goroutines commit
// back to back. Reads come 80-140 ms apart at random: a fixed period beats
// with the writer's cycle (holdMax, then readerGap) and measures the phase.
// Reports the median and worst read, and the writes committed per second.
func BenchmarkOpenReadDuringWrites(b *testing.B) {
	path, writes, stop := writersBackToBack(b)
	var waits []time.Duration
	for b.Loop() {
		time.Sleep(time.Duration(80+rand.IntN(60)) * time.Millisecond)
		start := time.Now()
		r, err := OpenReadOnly(path)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Snapshot(); err != nil {
			b.Fatal(err)
		}
		r.Close()
		waits = append(waits, time.Since(start))
	}
	elapsed := b.Elapsed()
	stop()
	slices.Sort(waits)
	b.ReportMetric(float64(waits[len(waits)/2].Microseconds()), "median-µs")
	b.ReportMetric(float64(waits[len(waits)-1].Microseconds()), "worst-µs")
	b.ReportMetric(float64(writes.Load())/elapsed.Seconds(), "writes/s")
	b.ReportMetric(0, "ns/op") // mostly the sleeps between reads
}

// dataSize is the bbolt high-water mark (file size minus preallocation).
func dataSize(tb testing.TB, path string) int64 {
	r, err := OpenReadOnly(path)
	if err != nil {
		tb.Fatal(err)
	}
	var n int64
	if err := r.view(func(tx *bolt.Tx) error { n = tx.Size(); return nil }); err != nil {
		tb.Fatal(err)
	}
	return n
}

// applyRecord is a record shaped like a sparkform_data instance as the
// engine writes it: compact value of a shared type, node details, one
// dependency.
func applyRecord(addr, dep string) *Resource {
	value := fmt.Appendf(nil, "\x84\xa2id\xb0%016x\xa5input\xb0%016x\xa6output\xb0%016x\xb0triggers_replace\xc0",
		len(addr)*7919, len(dep)*104729, len(dep)*104729)
	r := &Resource{
		Address: addr, Type: "sparkform_data", Provider: "sparkform",
		Node: json.RawMessage(`{"Name":"node.local","Transport":"local","Host":"","Port":22,"User":"root","IdentityFile":"",` +
			`"IdentityFiles":null,"IdentitiesOnly":false,"KnownHosts":"","ProxyJump":null,"Become":false,"Timeout":15000000000}`),
		Value:     value,
		ValueType: json.RawMessage(`["object",{"id":"string","input":"string","output":"string","triggers_replace":"dynamic"}]`),
	}
	if dep != "" {
		r.Dependencies = []string{dep}
	}
	return r
}

// applyOrder is the order an apply of N instances in chains of 10 stores
// them (every chain's first link, then every second link...): shape
// "blocks" names them like bench/run.sh -b (one block per instance),
// "count" like bench/run.sh (10 blocks with count = N/10).
func applyOrder(shape string, n int) (addrs, deps []string) {
	name := func(chain, link int) string {
		if shape == "blocks" {
			return fmt.Sprintf("sparkform_data.c%d_%d", chain, link)
		}
		return fmt.Sprintf("sparkform_data.r%d[%d]", link, chain)
	}
	for link := 0; link < 10; link++ {
		for chain := 0; chain < (n+9)/10 && len(addrs) < n; chain++ {
			addrs = append(addrs, name(chain, link))
			dep := ""
			if link > 0 {
				dep = name(chain, link-1)
				if shape != "blocks" {
					dep = fmt.Sprintf("sparkform_data.r%d", link-1)
				}
			}
			deps = append(deps, dep)
		}
	}
	return addrs, deps
}

// BenchmarkApply: what an apply from empty costs the store per instance
// (b.N instances, 10 at a time as the engine runs them: an intent, then
// Complete with the result), and the file it leaves:
//
//	go test -run '^$' -bench Apply -benchtime=10000x -benchmem ./state/
func BenchmarkApply(b *testing.B) {
	for _, shape := range []string{"blocks", "count"} {
		b.Run("shape="+shape, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "state.db")
			s, err := Open(path, Options{})
			if err != nil {
				b.Fatal(err)
			}
			addrs, deps := applyOrder(shape, b.N)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for w := 0; w < 10; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := next.Add(1) - 1; i < int64(b.N); i = next.Add(1) - 1 {
						r := applyRecord(addrs[i], deps[i])
						if err := s.PutIntent(&Intent{Address: r.Address, Action: "create", Resource: r}); err != nil {
							b.Error(err)
							return
						}
						if err := s.Complete(r.Address, r); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			commits := s.commits.Load()
			if err := s.Close(); err != nil { // includes the last-good copy
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(2*float64(b.N)/float64(commits), "writes/commit")
			fi, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(fi.Size())/float64(b.N), "file-B/instance")
			b.ReportMetric(float64(dataSize(b, path))/float64(b.N), "used-B/instance")
		})
	}
}

// BenchmarkSession: what a command pays the store around its work on a
// state of 10,000 instances: opening it for writing and closing it with
// nothing written (a no-op plan), and with one instance written (an apply
// that changed one thing: the last-good copy is refreshed).
func BenchmarkSession(b *testing.B) {
	path := filepath.Join(b.TempDir(), "state.db")
	s, err := Open(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	addrs, deps := applyOrder("blocks", 10000)
	batch := make([]*op, len(addrs))
	for i := range addrs {
		fn, err := putResourceOp(applyRecord(addrs[i], deps[i]))
		if err != nil {
			b.Fatal(err)
		}
		batch[i] = &op{fn: fn}
	}
	for i := 0; i < len(batch); i += 20 { // commits of 20, as an apply makes them
		runOps(s, batch[i:min(i+20, len(batch))])
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	for _, write := range []bool{false, true} {
		b.Run(fmt.Sprintf("write=%v", write), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s, err := Open(path, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if write {
					if err := s.PutResource(applyRecord(addrs[0], "")); err != nil {
						b.Fatal(err)
					}
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadDuringApply: how long a read (open, Snapshot, close) takes
// while another process applies (TestReaderDuringApply's child: an intent,
// a 2 ms provider call, a result, per resource). Reports the median and
// the worst read.
func BenchmarkReadDuringApply(b *testing.B) {
	waits, _ := readsDuringApply(b, 0, b.N)
	slices.Sort(waits)
	b.ReportMetric(float64(waits[len(waits)/2].Microseconds()), "median-µs")
	b.ReportMetric(float64(waits[len(waits)-1].Microseconds()), "worst-µs")
	b.ReportMetric(0, "ns/op") // the reads' sleeps between them are in it
}
