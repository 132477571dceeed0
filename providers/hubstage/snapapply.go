package hubstage

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/internal/ctyval"
	"github.com/sparkform/sparkform/providers/internal/restore"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// store is the record store (Dir set by tests).
func (r *snapshot) store() restore.Store { return restore.Store{Kind: snapRecordKind, Dir: r.recDir} }

// lineWriter calls fn with every complete line written to it.
type lineWriter struct {
	buf []byte
	fn  func(string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.fn(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

// recvResult is what the receiver reported.
type recvResult struct {
	ok     bool
	failed []string // "ETAG: message"
	caps   []string // "C NAME" lines: what the node's receiver can do (prep: "puts")
}

// receive runs the receiver in mode with jobs; progress lines (P, D) feed
// prog (bytes on the node now, counted from the blobs to fetch). helper
// is the node helper's path and its hubfetch arguments (nil: the shell's
// job loop; the receiver falls back to it where the helper is missing).
func (r *snapshot) receive(ctx context.Context, conn node.Conn, become bool, s *snapSpec, commit, mode, owner string, batch []string, batchKind string,
	secret, jobs, links []byte, fetch []string, helper []string, prog func(cur int64)) (*recvResult, error) {
	st := r.store()
	key := snapKey(s.HubDir, s.repoDir(), commit)
	rev := s.Revision
	if hex40.MatchString(rev) {
		rev = ""
	}
	argv := []string{"sh", "-c", restore.Prelude + "\n" + snapReceiveScript, "sh", st.Dir, st.Kind, st.Name(key), "key " + key + "\n",
		s.HubDir, s.repoDir(), commit, rev, strconv.Itoa(s.Parallel), mode, owner, batchKind, "", "", ""}
	if batchKind != "" {
		argv[len(argv)-3] = node.QuoteArgv(batch)
	}
	if len(helper) > 1 && helper[0] != "" {
		argv[len(argv)-2], argv[len(argv)-1] = helper[0], node.QuoteArgv(helper[1:])
	}
	argv = append(argv, fetch...)
	stdin := io.MultiReader(bytes.NewReader(secret), strings.NewReader("\n"+strconv.Itoa(len(jobs))+"\n"), bytes.NewReader(jobs), bytes.NewReader(links))
	res := &recvResult{}
	var done, inflight int64
	lw := &lineWriter{fn: func(l string) {
		f := strings.SplitN(l, "\t", 3)
		switch f[0] {
		case "H": // the receiver's heartbeat before its transfer
			return
		case "P":
			if len(f) == 2 {
				inflight, _ = strconv.ParseInt(f[1], 10, 64)
			}
		case "D":
			if len(f) == 3 {
				n, _ := strconv.ParseInt(f[2], 10, 64)
				// Its bytes were in the last P sample as a partial blob.
				done, inflight = done+n, max(0, inflight-n)
			}
		case "E":
			if len(f) == 3 {
				res.failed = append(res.failed, f[1][:min(12, len(f[1]))]+": "+f[2])
			}
		case "OK":
			res.ok = true
		case "C":
			if len(f) == 2 {
				res.caps = append(res.caps, f[1])
			}
		}
		if prog != nil {
			prog(done + inflight)
		}
	}}
	_, err := conn.Run(ctx, node.Cmd{Argv: argv, Become: become, Stdin: stdin, Stdout: lw})
	if err != nil && len(res.failed) == 0 {
		if msg := exitStderr(err); msg != "" {
			return res, fmt.Errorf("%w on %s: %s", ErrTransfer, conn.Name(), msg)
		}
		return res, fmt.Errorf("%w on %s: %v", ErrTransfer, conn.Name(), err)
	}
	if len(res.failed) > 0 {
		n := len(res.failed)
		if n > maxListed {
			res.failed = append(res.failed[:maxListed:maxListed], fmt.Sprintf("... and %d more", n-maxListed))
		}
		return res, fmt.Errorf("%w on %s: %d blobs failed (the partial ones are kept and resume on the next apply):\n%s",
			ErrTransfer, conn.Name(), n, strings.Join(res.failed, "\n"))
	}
	if !res.ok {
		return res, fmt.Errorf("%w on %s: the receiver stopped without finishing", ErrTransfer, conn.Name())
	}
	return res, nil
}

// smallBlob is the size up to which a blob goes in the batch (when the
// transfer has one): hashed in a few processes after the batch, where
// larger ones are each hashed as soon as their own fetch ends.
// (A variable: tests lower it to send some blobs each way.)
var smallBlob int64 = 16 << 20

// jobLines renders the receiver's job list.
func jobLines(w *snapWork, batch bool) []byte {
	var b bytes.Buffer
	for _, e := range w.Corrupt {
		b.WriteString("X\t" + e + "\t0\t-\n")
	}
	for _, f := range w.Fetch {
		t := "B"
		if batch && f.Size <= smallBlob {
			t = "S"
		}
		b.WriteString(t + "\t" + f.Etag + "\t" + strconv.FormatInt(f.Size, 10) + "\t" + escapePath(f.Path) + "\n")
	}
	dirs := map[string]bool{}
	for _, f := range w.Links {
		if d := path.Dir(f.Path); d != "." && !dirs[d] {
			dirs[d] = true
			b.WriteString("M\t" + d + "\n")
		}
	}
	for _, f := range w.Links {
		b.WriteString("L\t" + linkTarget(f.Path, f.Etag) + "\t" + f.Path + "\n")
	}
	b.WriteString("END\n")
	return b.Bytes()
}

// linksTar is a tar of the links to write (nil when none): the receiver
// extracts it in snapshots/<commit>.
func linksTar(w *snapWork) []byte {
	if len(w.Links) == 0 {
		return nil
	}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	now := time.Now()
	for _, f := range w.Links {
		// Paths are checked (clean, relative, no tab or newline) and
		// targets are built here: nothing can point the extraction out of
		// the snapshot folder.
		_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: f.Path, Linkname: linkTarget(f.Path, f.Etag),
			Mode: 0o777, ModTime: now, Format: tar.FormatPAX})
	}
	_ = tw.Close()
	return b.Bytes()
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// relay streams each blob through this process (relay, push): prep on
// the node, then the blobs, then finish. Where the node's receiver takes
// many blobs in one command ("puts") they go in min(parallel, blobs)
// streams of many blobs each, balanced by bytes, each one command on the
// node (and one on the source node for a relay: snapStreamBatcher);
// elsewhere one put per blob.
func (r *snapshot) relay(ctx context.Context, conn node.Conn, become bool, s *snapSpec, w *snapWork, o *snapObs, tr snapTransfer,
	owner string, jobs []byte, prog func(int64)) error {
	res, err := r.receive(ctx, conn, become, s, w.Commit, "prep", owner, nil, "", nil, jobs, nil, nil, nil, nil)
	if err != nil {
		return err
	}
	var moved atomic.Int64
	var base int64
	offset := func(f snapFile) int64 {
		if p, ok := o.Partial[f.Etag]; ok && p <= f.Size {
			return p
		}
		return 0
	}
	for _, f := range w.Fetch {
		base += offset(f)
	}
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				prog(base + moved.Load())
			}
		}
	}()
	var errs []string
	if contains(res.caps, "puts") {
		errs = r.relayBatched(ctx, conn, become, s, w, tr, owner, offset, &moved)
	} else {
		errs = r.relayEach(ctx, conn, become, s, w, tr, owner, offset, &moved)
	}
	close(stop)
	if len(errs) > 0 {
		n := len(errs)
		if n > maxListed {
			errs = append(errs[:maxListed:maxListed], fmt.Sprintf("... and %d more", n-maxListed))
		}
		return fmt.Errorf("%w on %s: %d blobs failed (the partial ones resume on the next apply):\n%s", ErrTransfer, conn.Name(), n, strings.Join(errs, "\n"))
	}
	_, err = r.receive(ctx, conn, become, s, w.Commit, "finish", owner, nil, "", nil, jobs, linksTar(w), nil, nil, nil)
	return err
}

// receiverArgv is the receiver's argv in a relay mode (put, puts).
func (r *snapshot) receiverArgv(s *snapSpec, commit, mode, owner string, extra ...string) []string {
	st := r.store()
	key := snapKey(s.HubDir, s.repoDir(), commit)
	return append([]string{"sh", "-c", restore.Prelude + "\n" + snapReceiveScript, "sh", st.Dir, st.Kind, st.Name(key), "key " + key + "\n",
		s.HubDir, s.repoDir(), commit, "", "1", mode, owner, "", "", "", ""}, extra...)
}

// relayEach sends one put command per blob, parallel at once.
func (r *snapshot) relayEach(ctx context.Context, conn node.Conn, become bool, s *snapSpec, w *snapWork, tr snapTransfer,
	owner string, offset func(snapFile) int64, moved *atomic.Int64) []string {
	sem := make(chan struct{}, s.Parallel)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []string
	for _, f := range w.Fetch {
		wg.Add(1)
		sem <- struct{}{}
		go func(f snapFile, off int64) {
			defer wg.Done()
			defer func() { <-sem }()
			rc, err := tr.Stream(ctx, f, off)
			if err == nil {
				var res node.Result
				res, err = conn.Run(ctx, node.Cmd{Argv: r.receiverArgv(s, w.Commit, "put", owner, f.Etag, strconv.FormatInt(f.Size, 10)),
					Become: become, Stdin: countingReader{r: rc, n: moved}})
				rc.Close()
				if err == nil && !strings.HasPrefix(string(res.Stdout), "D ") {
					err = fmt.Errorf("%s", strings.TrimSpace(string(res.Stdout)))
				}
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, f.Path+": "+err.Error())
				mu.Unlock()
			}
		}(f, offset(f))
	}
	wg.Wait()
	return errs
}

// relayGroups splits files into at most n groups of about equal bytes
// (the biggest first, each to the lightest group), each in listing order.
func relayGroups(files []snapFile, offset func(snapFile) int64, n int) [][]snapFile {
	if len(files) == 0 {
		return nil
	}
	n = max(1, min(n, len(files)))
	idx := make([]int, len(files))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		return files[idx[a]].Size-offset(files[idx[a]]) > files[idx[b]].Size-offset(files[idx[b]])
	})
	load := make([]int64, n)
	of := make([]int, len(files))
	for _, i := range idx {
		g := 0
		for j := range load {
			if load[j] < load[g] {
				g = j
			}
		}
		of[i] = g
		load[g] += files[i].Size - offset(files[i])
	}
	groups := make([][]snapFile, n)
	for i, f := range files {
		groups[of[i]] = append(groups[of[i]], f)
	}
	return groups
}

// relayBatched sends the blobs in min(parallel, blobs) streams, each one
// "puts" command on the node fed by one source stream.
func (r *snapshot) relayBatched(ctx context.Context, conn node.Conn, become bool, s *snapSpec, w *snapWork, tr snapTransfer,
	owner string, offset func(snapFile) int64, moved *atomic.Int64) []string {
	var mu sync.Mutex
	var errs []string
	fail := func(msg string) {
		mu.Lock()
		errs = append(errs, msg)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for _, g := range relayGroups(w.Fetch, offset, s.Parallel) {
		wg.Add(1)
		go func(g []snapFile) {
			defer wg.Done()
			offs := make([]int64, len(g))
			for i, f := range g {
				offs[i] = offset(f)
			}
			src, err := streamMany(ctx, tr, g, offs)
			if err != nil {
				fail(err.Error())
				return
			}
			pr, pw := io.Pipe()
			wdone := make(chan struct{})
			go func() {
				defer close(wdone)
				for i, f := range g {
					n := f.Size - offs[i]
					if _, err := fmt.Fprintf(pw, "%s %d %d %d\n", f.Etag, f.Size, offs[i], n); err != nil {
						return
					}
					if _, err := io.CopyN(pw, countingReader{r: src, n: moved}, n); err != nil {
						pw.CloseWithError(fmt.Errorf("%s from the source: %w", f.Path, err))
						return
					}
				}
				_, _ = io.WriteString(pw, "END\n")
				pw.Close()
			}()
			done := map[string]bool{}
			var failed []string
			lw := &lineWriter{fn: func(l string) {
				f := strings.SplitN(l, "\t", 3)
				switch {
				case len(f) == 3 && f[0] == "D":
					done[f[1]] = true
				case len(f) == 3 && f[0] == "E":
					failed = append(failed, f[1][:min(12, len(f[1]))]+": "+f[2])
				}
			}}
			_, err = conn.Run(ctx, node.Cmd{Argv: r.receiverArgv(s, w.Commit, "puts", owner), Become: become, Stdin: pr, Stdout: lw})
			// The feeder stops (its writes fail, its source is closed) before
			// this returns: nothing reads the source after.
			pr.Close()
			src.Close()
			<-wdone
			for _, m := range failed {
				fail(m)
			}
			if err == nil && len(failed) == 0 {
				for _, f := range g {
					if !done[f.Etag] {
						fail(f.Path + ": not received")
					}
				}
			}
			if err != nil {
				fail(err.Error())
			}
		}(g)
	}
	wg.Wait()
	return errs
}

// streamMany is the bytes of each of files from its offset, one after the
// other (exactly Size-offset bytes each): the transfer's own batch when it
// has one (snapStreamBatcher: one command on the source node for a relay),
// else its Streams in turn.
func streamMany(ctx context.Context, tr snapTransfer, files []snapFile, offs []int64) (io.ReadCloser, error) {
	if b, ok := tr.(snapStreamBatcher); ok {
		return b.StreamMany(ctx, files, offs)
	}
	return &seqStream{ctx: ctx, tr: tr, files: files, offs: offs}, nil
}

// seqStream reads each file's Stream in turn, opened when reached.
// Close may come while a Read runs (the receiver gave up): it closes the
// current stream, and no Read opens another.
type seqStream struct {
	mu     sync.Mutex
	closed bool
	ctx    context.Context
	tr     snapTransfer
	files  []snapFile
	offs   []int64
	cur    io.ReadCloser
	i      int
}

func (q *seqStream) Read(p []byte) (int, error) {
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return 0, io.ErrClosedPipe
		}
		if q.cur == nil {
			if q.i >= len(q.files) {
				q.mu.Unlock()
				return 0, io.EOF
			}
			rc, err := q.tr.Stream(q.ctx, q.files[q.i], q.offs[q.i])
			if err != nil {
				q.mu.Unlock()
				return 0, err
			}
			q.cur = rc
		}
		cur := q.cur
		q.mu.Unlock()
		n, err := cur.Read(p)
		if err == io.EOF {
			q.mu.Lock()
			cur.Close()
			if q.cur == cur {
				q.cur, q.i = nil, q.i+1
			}
			q.mu.Unlock()
			if n == 0 {
				continue
			}
			err = nil
		}
		return n, err
	}
}

func (q *seqStream) Close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	if q.cur != nil {
		return q.cur.Close()
	}
	return nil
}

// destroyCommit gives back what the record of one snapshot names.
func (r *snapshot) destroyCommit(ctx context.Context, conn node.Conn, become bool, s *snapSpec, commit string) (string, error) {
	st := r.store()
	argv := []string{"sh", "-c", restore.Prelude + "\n" + snapDestroyScript, "sh", st.Dir, st.Kind,
		st.Name(snapKey(s.HubDir, s.repoDir(), commit)), s.HubDir, s.repoDir(), commit}
	res, err := conn.Run(ctx, node.Cmd{Argv: argv, Become: become})
	if err != nil {
		if msg := exitStderr(err); msg != "" {
			return "", fmt.Errorf("removing snapshot %s on %s: %s", short(commit), conn.Name(), msg)
		}
		return "", fmt.Errorf("removing snapshot %s on %s: %w", short(commit), conn.Name(), err)
	}
	out := string(res.Stdout)
	if !strings.HasSuffix(strings.TrimSpace(out), "OK") {
		return "", fmt.Errorf("removing snapshot %s on %s: unexpected output %q", short(commit), conn.Name(), out)
	}
	return strings.TrimSuffix(strings.TrimSpace(out), "OK"), nil
}

// Apply implements sdk.Resource.
func (r *snapshot) Apply(ctx context.Context, req sdk.ApplyRequest, progress func(sdk.Progress)) sdk.ApplyResponse {
	start := time.Now()
	fail := func(summary string, err error) sdk.ApplyResponse {
		return sdk.ApplyResponse{NewState: req.Prior, Private: req.Private, Diagnostics: sdk.Diagnostics{sdk.FromError(summary, err)}}
	}
	priv := decodeSnapPriv(req.Private)
	conn, err := r.conn(ctx, req.Node)
	if err != nil {
		return fail("Cannot reach node "+req.Node.Name, err)
	}
	become := req.Node.Become
	if req.Planned.IsNull() {
		return r.destroy(ctx, conn, become, req, priv, progress)
	}
	s, err := snapSpecOf(req.Planned)
	if err != nil {
		return fail("Invalid "+TypeSnapshot, err)
	}
	src, err := sourceOf(r.env(req.Node), s)
	if err != nil {
		return fail("Invalid "+TypeSnapshot, err)
	}
	// The Plan just before (PlanAndApply) listed the planned commit and
	// looked at the node: its findings serve, else both are done again.
	var l *snapListing
	var obs []*snapObs
	if priv.Planned != "" {
		if pe := r.takePlanned(plannedKey(req.Node, s, priv.Planned, src)); pe != nil {
			src, l, obs = pe.src, pe.l, []*snapObs{pe.o}
		}
	}
	if l == nil {
		progress(sdk.Progress{Message: "listing " + s.RepoID + "@" + s.Revision + " from " + src.Describe(), Elapsed: time.Since(start)})
		l, err = src.List(ctx, conn, s)
		if err != nil {
			return fail("Cannot list "+s.RepoID+"@"+s.Revision+" from "+src.Describe(), err)
		}
		// A plan that named a commit is applied to that commit only.
		if pc := priv.Planned; pc != "" && pc != l.Commit {
			return fail("Cannot apply "+req.Address, fmt.Errorf("%w: %s@%s is now commit %s, not the planned %s; run plan again",
				ErrChanged, s.RepoID, s.Revision, short(l.Commit), short(pc)))
		}
		obs, err = observe(ctx, conn, become, r.recDir, []obsReq{{s: s, commit: l.Commit}})
		if err != nil {
			return fail("Cannot look at "+s.HubDir+" on "+req.Node.Name, err)
		}
	}
	w, err := computeWork(s, l, obs[0])
	if err != nil {
		return fail("Cannot apply "+req.Address, err)
	}
	if err := w.fits(s, req.Node.Name); err != nil {
		return fail("Not enough space for "+s.RepoID+" on "+req.Node.Name, err)
	}
	// From here on the node may change: the state names the commit so
	// that destroy finds its record, whatever happens next.
	// This instance owns the commit's record when it writes now, or wrote
	// before (its private data, or its address in the record after a lost
	// reply); a snapshot found whole that it never wrote is not its own to
	// give back.
	newPriv := snapPriv{Commit: l.Commit}
	if w.none() && priv.Commit != l.Commit && !obs[0].Record.Has("owner", req.Address) {
		newPriv = snapPriv{Adopted: l.Commit}
	}
	earlier := append(priv.Others, priv.Commit)
	if len(req.Private) == 0 {
		earlier = append(earlier, ctyval.Str(ctyval.Attr(req.Prior, "commit")))
	}
	for _, c := range earlier {
		if hex40.MatchString(c) && c != l.Commit && !contains(newPriv.Others, c) {
			newPriv.Others = append(newPriv.Others, c)
		}
	}
	summary := ctyval.Str(req.Planned.GetAttr(SummaryAttribute))
	if summary == "" {
		summary = w.summary(src.Describe(), !req.Prior.IsNull())
	}
	planned := func(v cty.Value) cty.Value {
		// Keep the planned numbers (they describe the plan).
		set := map[string]cty.Value{}
		for _, a := range []string{"present_bytes", "transfer_bytes", "free_bytes", "file_count", "total_bytes"} {
			if pv := req.Planned.GetAttr(a); pv.IsKnown() && !pv.IsNull() {
				set[a] = pv
			}
		}
		return ctyval.With(v, set)
	}
	var total int64
	for _, f := range w.Fetch {
		total += f.Size
	}
	msg := fmt.Sprintf("%s: %d files from %s", s.RepoID, len(w.Fetch), src.Describe())
	var last int64
	prog := func(cur int64) {
		cur = min(cur, total)
		if cur < last {
			cur = last
		}
		last = cur
		progress(sdk.Progress{Message: msg, Current: cur, Total: total, Unit: sdk.UnitBytes, Elapsed: time.Since(start)})
	}
	var relayed int64
	if !w.none() {
		tr, err := src.Open(ctx, conn, s)
		if err != nil {
			return fail("Cannot open "+src.Describe(), err)
		}
		r0 := tr.Relayed()
		bargv, bkind := batchOf(tr)
		if argv, secret, ok := tr.NodeFetch(); ok {
			var helper []string
			if hf, ok := tr.(snapHelperFetcher); ok {
				if args := hf.HelperFetch(); args != nil {
					helper = append([]string{node.HelperPath(req.Node)}, args...)
				}
			}
			_, err = r.receive(ctx, conn, become, s, l.Commit, "fetch", req.Address, bargv, bkind, secret, jobLines(w, bkind != ""), linksTar(w), argv, helper, prog)
		} else {
			err = r.relay(ctx, conn, become, s, w, obs[0], tr, req.Address, jobLines(w, false), prog)
		}
		relayed = tr.Relayed() - r0
		if cerr := tr.Close(context.WithoutCancel(ctx)); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			resp := fail("Cannot make "+s.RepoID+" present on "+req.Node.Name, err)
			resp.NewState = planned(snapValue(req.Planned, s, w, true, cty.NumberIntVal(relayed), "incomplete: "+summary))
			resp.Private = newPriv.encode()
			return resp
		}
		prog(total)
	}
	var diags sdk.Diagnostics
	// An earlier commit of this instance is given back now: its blobs the
	// new snapshot links to are handed over to the new record.
	var left []string
	for _, c := range newPriv.Others {
		if _, err := r.destroyCommit(ctx, conn, become, s, c); err != nil {
			left = append(left, c)
			diags = append(diags, sdk.Diagnostic{Severity: sdk.Warning, Summary: "Old snapshot " + short(c) + " not removed", Detail: err.Error()})
		}
	}
	newPriv.Others = left
	return sdk.ApplyResponse{NewState: planned(snapValue(req.Planned, s, w, true, cty.NumberIntVal(relayed), summary)), Private: newPriv.encode(), Diagnostics: diags}
}

// destroy removes every snapshot this instance has a record for.
func (r *snapshot) destroy(ctx context.Context, conn node.Conn, become bool, req sdk.ApplyRequest, priv snapPriv, progress func(sdk.Progress)) sdk.ApplyResponse {
	fail := func(err error) sdk.ApplyResponse {
		return sdk.ApplyResponse{NewState: req.Prior, Private: req.Private, Diagnostics: sdk.Diagnostics{sdk.FromError("Cannot remove the snapshot", err)}}
	}
	if req.Prior.IsNull() {
		return sdk.ApplyResponse{NewState: cty.NullVal(snapSchema.Block.ImpliedType())}
	}
	s, err := snapSpecOf(req.Prior)
	if err != nil {
		return fail(err)
	}
	commits := append([]string(nil), priv.Others...)
	for _, c := range []string{priv.Commit, priv.Planned} {
		if hex40.MatchString(c) && !contains(commits, c) {
			commits = append(commits, c)
		}
	}
	// No private data at all (an older state, a lost reply): the commit of
	// the value, whose record says what was made.
	if c := ctyval.Str(ctyval.Attr(req.Prior, "commit")); len(req.Private) == 0 && hex40.MatchString(c) && !contains(commits, c) {
		commits = append(commits, c)
	}
	var kept []string
	for _, c := range commits {
		progress(sdk.Progress{Message: "removing " + s.RepoID + " snapshot " + short(c)})
		out, err := r.destroyCommit(ctx, conn, become, s, c)
		if err != nil {
			return fail(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if strings.HasPrefix(l, "KEPT ") {
				kept = append(kept, l)
			}
		}
	}
	resp := sdk.ApplyResponse{NewState: cty.NullVal(snapSchema.Block.ImpliedType())}
	if len(kept) > 0 {
		resp.Diagnostics = sdk.Diagnostics{{Severity: sdk.Warning, Summary: fmt.Sprintf("%d blobs left for other snapshots", len(kept)),
			Detail: "Blobs this resource fetched are linked from snapshots sparkform does not manage; they were left in place:\n" + strings.Join(kept, "\n")}}
	}
	return resp
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
