package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/docker/go-units"
	"github.com/mattn/go-runewidth"
	"github.com/vbauerster/cupwriter"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/cmd/sparkform/internal/jsonui"
	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/providers/sdk"
)

// stillEvery is the most often a line about one running operation is
// printed off a terminal (and an apply_progress message sent): a 30 GB
// pull per node stays a handful of lines, as Terraform's "Still
// creating..." does.
const stillEvery = 10 * time.Second

// opDisplay shows apply operations while they run. There are three: a
// plain log for pipes and files (plainDisplay), redrawn lines on a
// terminal (barDisplay) and the -json stream (jsonDisplay).
type opDisplay interface {
	// setTotal says how many operations the apply will run (the N/M line).
	setTotal(n int)
	start(addr string, a plans.Action)
	progress(addr string, p sdk.Progress)
	finish(addr string, a plans.Action, took time.Duration, err error)
	// line prints a whole line (refresh, notes) above anything redrawn.
	line(s string)
	// close stops redrawing and timers; what follows prints plainly.
	close()
}

var (
	_ opDisplay = (*plainDisplay)(nil)
	_ opDisplay = (*barDisplay)(nil)
	_ opDisplay = (*jsonDisplay)(nil)
)

// op is one running operation.
type op struct {
	addr   string
	action plans.Action
	start  time.Time
	shown  time.Time // last line printed about it
	last   sdk.Progress
	// first sample with a count, for the average rate
	rateFrom   time.Time
	rateFromN  int64
	hasSamples bool
}

func (o *op) update(p sdk.Progress, now time.Time) {
	if p.Total > 0 || p.Current > 0 {
		if !o.hasSamples || p.Current < o.rateFromN {
			o.rateFrom, o.rateFromN, o.hasSamples = now, p.Current, true
		}
	}
	if p.Message == "" {
		p.Message = o.last.Message
	}
	o.last = p
}

// rate is bytes per second since the first sample, or 0.
func (o *op) rate(now time.Time) float64 {
	d := now.Sub(o.rateFrom).Seconds()
	if !o.hasSamples || d < 1 || o.last.Unit != sdk.UnitBytes {
		return 0
	}
	return float64(o.last.Current-o.rateFromN) / d
}

var binaryUnits = []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}

// humanBytes is "3.1 GiB" (binary units, one decimal).
func humanBytes(n float64) string {
	if n < 1024 {
		return fmt.Sprintf("%.0f B", n)
	}
	return units.CustomSize("%.1f %s", n, 1024, binaryUnits)
}

// counts is "3.1 GiB of 29.8 GiB, 45.0 MiB/s" or "450 of 1000 objects".
func (o *op) counts(now time.Time) string {
	p := o.last
	if p.Total <= 0 && p.Current <= 0 {
		return ""
	}
	var b strings.Builder
	switch p.Unit {
	case sdk.UnitBytes:
		b.WriteString(humanBytes(float64(p.Current)))
		if p.Total > 0 {
			b.WriteString(" of " + humanBytes(float64(p.Total)))
		}
		if r := o.rate(now); r > 0 {
			b.WriteString(", " + humanBytes(r) + "/s")
		}
	default:
		fmt.Fprintf(&b, "%d", p.Current)
		if p.Total > 0 {
			fmt.Fprintf(&b, " of %d", p.Total)
		}
		if p.Unit != "" {
			b.WriteString(" " + p.Unit)
		}
	}
	return b.String()
}

var stillVerb = map[plans.Action]string{
	plans.Create: "Still creating...", plans.Update: "Still modifying...", plans.Delete: "Still destroying...",
	plans.DeleteThenCreate: "Still creating...", plans.CreateThenDelete: "Still creating...",
}

// stillLine is "addr: Still creating... [40s elapsed], 3.1 GiB of 29.8 GiB,
// 45.0 MiB/s (pulling x: 2/5 layers)".
func (o *op) stillLine(now time.Time) string {
	s := fmt.Sprintf("%s: %s [%s elapsed]", o.addr, stillVerb[o.action], now.Sub(o.start).Round(time.Second))
	if c := o.counts(now); c != "" {
		s += ", " + c
	}
	if o.last.Message != "" {
		s += " (" + o.last.Message + ")"
	}
	return s
}

// ticking runs fn every second until stop is closed.
func ticking(stop <-chan struct{}, fn func(time.Time)) {
	t := time.NewTicker(time.Second)
	go func() {
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				fn(now)
			}
		}
	}()
}

// plainDisplay is for pipes and log files: a line when an operation
// starts and ends, and in between at most one line per stillEvery per
// operation, with what it is doing and how far it got.
type plainDisplay struct {
	w     io.Writer
	every time.Duration

	mu    sync.Mutex
	ops   map[string]*op
	stop  chan struct{}
	ended bool
}

func newPlainDisplay(w io.Writer) *plainDisplay {
	d := &plainDisplay{w: w, every: stillEvery, ops: map[string]*op{}, stop: make(chan struct{})}
	ticking(d.stop, d.tick)
	return d
}

func (d *plainDisplay) setTotal(int) {}

func (d *plainDisplay) printf(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.w, format, args...)
}

func (d *plainDisplay) line(s string) { d.printf("%s\n", s) }

func (d *plainDisplay) start(addr string, a plans.Action) {
	now := time.Now()
	d.mu.Lock()
	d.ops[addr] = &op{addr: addr, action: a, start: now, shown: now}
	d.mu.Unlock()
	d.printf("%s: %s...\n", addr, presentVerb[a])
}

// progress records p; it prints only when the operation has been quiet
// for stillEvery (the ticker covers operations that report nothing).
func (d *plainDisplay) progress(addr string, p sdk.Progress) {
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	o := d.ops[addr]
	if o == nil {
		return
	}
	o.update(p, now)
	if now.Sub(o.shown) >= d.every {
		o.shown = now
		fmt.Fprintln(d.w, o.stillLine(now))
	}
}

func (d *plainDisplay) tick(now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	addrs := make([]string, 0, len(d.ops))
	for a := range d.ops {
		addrs = append(addrs, a)
	}
	sort.Strings(addrs)
	for _, a := range addrs {
		if o := d.ops[a]; now.Sub(o.shown) >= d.every {
			o.shown = now
			fmt.Fprintln(d.w, o.stillLine(now))
		}
	}
}

func (d *plainDisplay) finish(addr string, a plans.Action, took time.Duration, err error) {
	d.mu.Lock()
	delete(d.ops, addr)
	d.mu.Unlock()
	d.printf("%s\n", finishLine(addr, a, took, err))
}

func finishLine(addr string, a plans.Action, took time.Duration, err error) string {
	if err != nil {
		return fmt.Sprintf("%s: %s failed after %s", addr, presentVerb[a], took.Round(100*time.Millisecond))
	}
	return fmt.Sprintf("%s: %s complete after %s", addr, doneVerb[a], took.Round(100*time.Millisecond))
}

func (d *plainDisplay) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.ended {
		d.ended = true
		close(d.stop)
	}
}

// barDisplay is for a terminal: one line per running operation, redrawn
// in place (mpb), with its elapsed time, what it does, human sizes and
// the rate; an overall "N/M" line below when the apply has more than one
// operation. Finished operations leave one plain line above.
type barDisplay struct {
	w  io.Writer
	fd int           // the terminal w writes to, for mpb's size queries
	p  *mpb.Progress // made at the first operation: refresh lines and the plan print plainly before it

	mu      sync.Mutex
	ops     map[string]*op
	bars    map[string]*mpb.Bar
	overall *mpb.Bar
	total   int
	done    int
	began   time.Time
	closed  bool
}

func newBarDisplay(w io.Writer, fd int) *barDisplay {
	return &barDisplay{w: w, fd: fd, ops: map[string]*op{}, bars: map[string]*mpb.Bar{}, began: time.Now()}
}

// container returns the mpb container, made on first use; nil once closed.
func (d *barDisplay) container() *mpb.Progress {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	if d.p == nil {
		// w buffers (see console): mpb is told it draws on the terminal.
		cw := cupwriter.New(d.w, false)
		cw.SetTermFd(d.fd)
		d.p = mpb.New(mpb.WithConsoleWriter(cw), mpb.WithRefreshRate(150*time.Millisecond))
	}
	return d.p
}

// fit cuts s to the terminal width the bar may use.
func fit(s string, st decor.Statistics) string {
	if w := st.AvailableWidth; w > 0 && runewidth.StringWidth(s) > w {
		return runewidth.Truncate(s, w, "…")
	}
	return s
}

func (d *barDisplay) setTotal(n int) {
	d.mu.Lock()
	d.total = n
	if n <= 1 || d.overall != nil || d.closed {
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	p := d.container()
	if p == nil {
		return
	}
	// mpb calls the decorators from its own goroutines: never hold d.mu
	// while talking to it.
	b := p.New(int64(n), mpb.NopStyle(), mpb.BarPriority(1<<30), mpb.BarRemoveOnComplete(),
		mpb.PrependDecorators(decor.Any(func(st decor.Statistics) string {
			d.mu.Lock()
			defer d.mu.Unlock()
			return fit(fmt.Sprintf("Applying: %d/%d done, %d running [%s elapsed]", d.done, d.total, len(d.ops),
				time.Since(d.began).Round(time.Second)), st)
		})))
	d.mu.Lock()
	d.overall = b
	d.mu.Unlock()
}

func (d *barDisplay) line(s string) {
	d.mu.Lock()
	p := d.p
	if d.closed {
		p = nil
	}
	d.mu.Unlock()
	if p != nil {
		if _, err := p.Write([]byte(s + "\n")); err == nil {
			return
		}
	}
	fmt.Fprintln(d.w, s)
}

func (d *barDisplay) start(addr string, a plans.Action) {
	now := time.Now()
	o := &op{addr: addr, action: a, start: now, shown: now}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.ops[addr] = o
	d.mu.Unlock()
	p := d.container()
	if p == nil {
		return
	}
	b := p.New(0, mpb.NopStyle(), mpb.BarRemoveOnComplete(),
		mpb.PrependDecorators(decor.Any(func(st decor.Statistics) string {
			d.mu.Lock()
			defer d.mu.Unlock()
			return fit(d.text(o, time.Now()), st)
		})))
	d.mu.Lock()
	d.bars[addr] = b
	d.mu.Unlock()
}

// text is "addr: Creating... [12s] 3.1 GiB of 29.8 GiB, 45.0 MiB/s pulling x: 2/5 layers".
func (d *barDisplay) text(o *op, now time.Time) string {
	s := fmt.Sprintf("%s: %s... [%s]", o.addr, presentVerb[o.action], now.Sub(o.start).Round(time.Second))
	if c := o.counts(now); c != "" {
		s += " " + c
	}
	if o.last.Message != "" {
		s += " " + o.last.Message
	}
	return s
}

func (d *barDisplay) progress(addr string, p sdk.Progress) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if o := d.ops[addr]; o != nil {
		o.update(p, time.Now())
	}
}

func (d *barDisplay) finish(addr string, a plans.Action, took time.Duration, err error) {
	d.mu.Lock()
	b := d.bars[addr]
	delete(d.bars, addr)
	delete(d.ops, addr)
	d.done++
	overall := d.overall
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return
	}
	d.line(finishLine(addr, a, took, err))
	if b != nil {
		b.SetTotal(-1, true)
	}
	if overall != nil {
		overall.Increment()
	}
}

// close completes what is still shown and waits for the last redraw, so
// the summary that follows starts on a clean line.
func (d *barDisplay) close() {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.closed = true
	p := d.p
	bars := make([]*mpb.Bar, 0, len(d.bars)+1)
	for _, b := range d.bars {
		bars = append(bars, b)
	}
	if d.overall != nil {
		bars = append(bars, d.overall)
	}
	d.mu.Unlock()
	for _, b := range bars {
		b.Abort(true)
	}
	if p != nil {
		p.Wait()
	}
}

// jsonDisplay sends apply_start, apply_progress (at most one per
// instance per stillEvery) and apply_complete or apply_errored, as
// Terraform's hooks: their text, level (info, errored included) and
// hook objects (resource, action, id_key and id_value where the object
// has an id or a name, elapsed_seconds in whole seconds). Progress a
// provider reports rides in apply_progress under sparkform's own names
// (message, current, total, unit, bytes_per_second).
type jsonDisplay struct {
	v     *jsonView
	every time.Duration
	where map[string]*plans.ResourceChange // addr -> its change (from the plan)

	mu    sync.Mutex
	ops   map[string]*op
	objs  map[string]cty.Value // addr -> what its apply left (AppliedObject)
	stop  chan struct{}
	ended bool
}

func newJSONDisplay(v *jsonView) *jsonDisplay {
	d := &jsonDisplay{v: v, every: stillEvery, ops: map[string]*op{}, objs: map[string]cty.Value{}, stop: make(chan struct{})}
	ticking(d.stop, d.tick)
	return d
}

func (d *jsonDisplay) setTotal(int) {}

func (d *jsonDisplay) line(s string) { d.v.Log("info", s) }

// describe takes each instance's change from the plan being applied: its
// provider and node for the resource objects, its prior object's id.
func (d *jsonDisplay) describe(p *plans.Plan) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.where = map[string]*plans.ResourceChange{}
	for _, c := range p.Changes {
		d.where[c.Addr] = c
	}
}

// appliedObject keeps what the apply of addr left, for its apply_complete.
func (d *jsonDisplay) appliedObject(addr string, obj cty.Value) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.objs[addr] = obj
}

// hook is the hook object of o; d.mu is held.
func (d *jsonDisplay) hook(o *op) map[string]any {
	var provider, node string
	if c := d.where[o.addr]; c != nil {
		provider, node = c.Provider, c.NodeName()
	}
	return map[string]any{"resource": jsonui.Resource(o.addr, provider, node), "action": jsonui.Action(o.action)}
}

func (d *jsonDisplay) start(addr string, a plans.Action) {
	now := time.Now()
	o := &op{addr: addr, action: a, start: now, shown: now}
	d.mu.Lock()
	d.ops[addr] = o
	h := d.hook(o)
	var k, v string
	if c := d.where[addr]; c != nil && a != plans.Create {
		k, v = jsonui.ObjectID(c.Before, c.BeforeSensitive())
	}
	d.mu.Unlock()
	if k != "" {
		h["id_key"], h["id_value"] = k, v
	}
	d.v.Emit("info", "apply_start", jsonui.ApplyStartText(addr, a, k, v), map[string]any{"hook": h})
}

func (d *jsonDisplay) sendProgress(o *op, now time.Time) {
	o.shown = now
	h := d.hook(o)
	took := jsonui.Elapsed(now.Sub(o.start))
	h["elapsed_seconds"] = took.Seconds()
	if o.last.Message != "" {
		h["message"] = o.last.Message
	}
	if o.last.Total > 0 || o.last.Current > 0 {
		h["current"], h["total"] = o.last.Current, o.last.Total
		if o.last.Unit != "" {
			h["unit"] = o.last.Unit
		}
		if r := o.rate(now); r > 0 {
			h["bytes_per_second"] = int64(r)
		}
	}
	d.v.Emit("info", "apply_progress", jsonui.ApplyProgressText(o.addr, o.action, took), map[string]any{"hook": h})
}

func (d *jsonDisplay) progress(addr string, p sdk.Progress) {
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if o := d.ops[addr]; o != nil {
		o.update(p, now)
		if now.Sub(o.shown) >= d.every {
			d.sendProgress(o, now)
		}
	}
}

func (d *jsonDisplay) tick(now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, a := range slices.Sorted(maps.Keys(d.ops)) {
		if o := d.ops[a]; now.Sub(o.shown) >= d.every {
			d.sendProgress(o, now)
		}
	}
}

func (d *jsonDisplay) finish(addr string, a plans.Action, took time.Duration, err error) {
	now := time.Now()
	d.mu.Lock()
	o := d.ops[addr]
	delete(d.ops, addr)
	if o == nil {
		o = &op{addr: addr, action: a, start: now.Add(-took)}
	}
	h := d.hook(o)
	obj, hasObj := d.objs[addr]
	delete(d.objs, addr)
	var sensitive []string
	if c := d.where[addr]; c != nil {
		sensitive = c.SensitiveAttrs
	}
	d.mu.Unlock()
	took = jsonui.Elapsed(took)
	h["elapsed_seconds"] = took.Seconds()
	if err != nil {
		d.v.Emit("info", "apply_errored", jsonui.ApplyErroredText(addr, a, took), map[string]any{"hook": h})
		return
	}
	var k, v string
	if hasObj {
		k, v = jsonui.ObjectID(obj, sensitive)
	}
	if k != "" {
		h["id_key"], h["id_value"] = k, v
	}
	d.v.Emit("info", "apply_complete", jsonui.ApplyCompleteText(addr, a, took, k, v), map[string]any{"hook": h})
}

func (d *jsonDisplay) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.ended {
		d.ended = true
		close(d.stop)
	}
}
