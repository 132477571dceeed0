package hubstage

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/internal/ctyval"
	"github.com/sparkform/sparkform/providers/internal/restore"
	"github.com/sparkform/sparkform/providers/internal/units"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// snapObs is what one observation found on the node for one snapshot.
type snapObs struct {
	Free    int64
	Ref     string           // refs/<revision> content, "-" missing, "" pinned
	Blobs   map[string]int64 // complete blobs by etag
	Partial map[string]int64 // .incomplete sizes by etag
	Links   map[string]string
	Others  map[string]string // non-link entries by path (type letter)
	Hashes  map[string]string // verify=full: recomputed address by etag
	Record  restore.Record
}

// obsReq is one snapshot to observe.
type obsReq struct {
	s      *snapSpec
	commit string // "" when unknown (the ref on the node is used)
}

// observe runs snapObserveScript for every request in ONE remote command.
func observe(ctx context.Context, conn node.Conn, become bool, recDir string, reqs []obsReq) ([]*snapObs, error) {
	argv := []string{"sh", "-c", restore.Prelude + "\n" + snapObserveScript, "sh", recDir, snapRecordKind}
	for _, q := range reqs {
		rev := q.s.Revision
		if hex40.MatchString(rev) {
			rev = ""
		}
		name := "" // the script's to compute from the ref it reads
		if q.commit != "" {
			name = restore.Store{Kind: snapRecordKind}.Name(snapKey(q.s.HubDir, q.s.repoDir(), q.commit))
		}
		argv = append(argv, q.s.HubDir, q.s.repoDir(), q.commit, rev, q.s.Verify, name)
	}
	res, err := conn.Run(ctx, node.Cmd{Argv: argv, Become: become})
	if err != nil {
		return nil, fmt.Errorf("%w on %s: %v", ErrObserve, conn.Name(), err)
	}
	var out []*snapObs
	var cur *snapObs
	sc := bufio.NewScanner(bytes.NewReader(res.Stdout))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	ended := 0
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if f[0] != "I" && cur == nil {
			return nil, fmt.Errorf("%w on %s: unexpected output %q", ErrObserve, conn.Name(), sc.Text())
		}
		num := func(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }
		switch {
		case f[0] == "I":
			cur = &snapObs{Blobs: map[string]int64{}, Partial: map[string]int64{}, Links: map[string]string{}, Others: map[string]string{},
				Hashes: map[string]string{}, Record: restore.Record{}}
			out = append(out, cur)
		case f[0] == "V" && len(f) == 2:
			cur.Free = num(f[1]) * 1024
		case f[0] == "R" && len(f) == 2:
			cur.Ref = f[1]
		case f[0] == "b" && len(f) == 3:
			cur.Blobs[f[1]] = num(f[2])
		case f[0] == "p" && len(f) == 3:
			cur.Partial[f[1]] = num(f[2])
		case f[0] == "l" && len(f) == 3:
			cur.Links[f[1]] = f[2]
		case f[0] == "o" && len(f) == 3:
			cur.Others[f[1]] = f[2]
		case f[0] == "h" && len(f) == 3:
			cur.Hashes[f[1]] = f[2]
		case f[0] == "r" && len(f) >= 2:
			k, v, _ := strings.Cut(strings.Join(f[1:], "\t"), " ")
			cur.Record[k] = append(cur.Record[k], v)
		case f[0] == "Z":
			ended++
		default:
			// A name with a tab or newline: never one of ours (listings
			// with such names are refused), so it is not looked at.
		}
	}
	if len(out) != len(reqs) || ended != len(reqs) {
		return nil, fmt.Errorf("%w on %s: %d results for %d snapshots", ErrObserve, conn.Name(), ended, len(reqs))
	}
	return out, nil
}

// snapWork is what apply must do to make a listing present, and the
// plan's numbers.
type snapWork struct {
	Commit                 string
	Files                  []snapFile // selected, sorted by path
	Total, Present, Xfer   int64
	Free                   int64
	Fetch                  []snapFile // one per etag to transfer
	Corrupt                []string   // blobs to remove first (verify=full)
	Links                  []snapFile // links to (re)write
	RefWrite               bool
	Missing, Short, BadLnk int // drift counts
}

func (w *snapWork) none() bool {
	return len(w.Fetch) == 0 && len(w.Links) == 0 && !w.RefWrite && len(w.Corrupt) == 0
}

// linkTarget is the relative link huggingface_hub writes for a file at p.
func linkTarget(p, etag string) string {
	return strings.Repeat("../", strings.Count(p, "/")+2) + "blobs/" + etag
}

var hexAddr = map[int]bool{40: true, 64: true}

// checkListing refuses a listing the cache cannot hold safely: a path
// that is not clean and relative (a hostile hub could name
// "../../x"), or holds a tab or newline; an etag that is not a content
// address.
func checkListing(l *snapListing) error {
	if !hex40.MatchString(l.Commit) {
		return fmt.Errorf("%w: commit %q is not 40 hex digits", ErrBadListing, l.Commit)
	}
	seen := map[string]bool{}
	for _, f := range l.Files {
		if f.Path == "" || path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || f.Path == ".." || strings.HasPrefix(f.Path, "../") ||
			strings.ContainsAny(f.Path, "\t\n\r\x00\\") || !stableString(f.Path) {
			return fmt.Errorf("%w: file %q: not a clean relative path", ErrBadListing, f.Path)
		}
		if !hexAddr[len(f.Etag)] || strings.Trim(f.Etag, "0123456789abcdef") != "" {
			return fmt.Errorf("%w: file %q: etag %q is not a sha256 or git sha1", ErrBadListing, f.Path, f.Etag)
		}
		if f.Size < 0 {
			return fmt.Errorf("%w: file %q: negative size", ErrBadListing, f.Path)
		}
		if seen[f.Path] {
			return fmt.Errorf("%w: file %q listed twice", ErrBadListing, f.Path)
		}
		seen[f.Path] = true
	}
	return nil
}

// computeWork compares a listing with what the node holds.
func computeWork(s *snapSpec, l *snapListing, o *snapObs) (*snapWork, error) {
	if err := checkListing(l); err != nil {
		return nil, err
	}
	w := &snapWork{Commit: l.Commit, Free: o.Free}
	for _, f := range l.Files {
		if s.selected(f.Path) {
			w.Files = append(w.Files, f)
		}
	}
	if len(w.Files) == 0 {
		return nil, fmt.Errorf("%w: %s at %s has no files that pass include/exclude", ErrEmpty, s.RepoID, short(l.Commit))
	}
	sort.Slice(w.Files, func(i, j int) bool { return w.Files[i].Path < w.Files[j].Path })
	done := map[string]bool{}
	var occupied []string
	for _, f := range w.Files {
		if t, ok := o.Others[f.Path]; ok {
			occupied = append(occupied, fmt.Sprintf("%s (type %s)", f.Path, t))
		}
		if o.Links[f.Path] != linkTarget(f.Path, f.Etag) {
			w.Links = append(w.Links, f)
			if _, ok := o.Links[f.Path]; ok {
				w.BadLnk++
			}
		}
		if done[f.Etag] {
			continue
		}
		done[f.Etag] = true
		w.Total += f.Size
		bs, ok := o.Blobs[f.Etag]
		good := ok && bs == f.Size
		if good && s.Verify == "full" {
			if h, hashed := o.Hashes[f.Etag]; hashed && h != f.Etag {
				good = false
				w.Corrupt = append(w.Corrupt, f.Etag)
			}
		}
		if good {
			w.Present += f.Size
			continue
		}
		if ok && bs != f.Size {
			w.Short++
		} else if !ok {
			w.Missing++
		}
		w.Fetch = append(w.Fetch, f)
		if p, ok := o.Partial[f.Etag]; ok && p <= f.Size {
			w.Present += p
			w.Xfer += f.Size - p
		} else {
			w.Xfer += f.Size
		}
	}
	if len(occupied) > 0 {
		return nil, fmt.Errorf("%w: in snapshots/%s, %s: not links; move them away (this resource never replaces a file it did not write)",
			ErrOccupied, short(l.Commit), strings.Join(occupied, ", "))
	}
	if !hex40.MatchString(s.Revision) && o.Ref != l.Commit {
		w.RefWrite = true
	}
	return w, nil
}

// fits refuses a transfer that would not leave keep_free.
func (w *snapWork) fits(s *snapSpec, nodeName string) error {
	if w.Xfer > 0 && w.Xfer > w.Free-s.KeepFree {
		return fmt.Errorf("%w on %s: %s to transfer, %s free on %s's filesystem, keep_free %s: free %s there, lower keep_free, or exclude files",
			ErrNoFit, nodeName, units.Human(w.Xfer), units.Human(w.Free), s.HubDir, units.Human(s.KeepFree),
			units.Human(w.Xfer-(w.Free-s.KeepFree)))
	}
	return nil
}

// summary is the one-line change_summary: what the plan decides (the
// commit, the files, the source) and, for a snapshot that was there
// (existing), its drift. Not the bytes present or to fetch nor the free
// space: other writers move them between plan and apply (another
// snapshot's shared blobs, a partial blob, logs), and an apply's new plan
// must repeat the summary; present_bytes, transfer_bytes and free_bytes
// show them.
func (w *snapWork) summary(src string, existing bool) string {
	parts := []string{fmt.Sprintf("commit %s, %d files, %s from %s", short(w.Commit), len(w.Files), units.Human(w.Total), src)}
	if d := w.drift(); d != "" && existing {
		parts = append(parts, d)
	}
	return strings.Join(parts, ", ")
}

// drift says what is broken in a snapshot that was there ("" nothing).
func (w *snapWork) drift() string {
	var d []string
	if w.Missing > 0 && w.Missing < len(w.Files) {
		d = append(d, fmt.Sprintf("%d blobs missing", w.Missing))
	}
	if w.Short > 0 {
		d = append(d, fmt.Sprintf("%d blobs of the wrong size", w.Short))
	}
	if len(w.Corrupt) > 0 {
		d = append(d, fmt.Sprintf("%d blobs with wrong content", len(w.Corrupt)))
	}
	if w.BadLnk > 0 {
		d = append(d, fmt.Sprintf("%d wrong links", w.BadLnk))
	}
	if len(d) == 0 {
		return ""
	}
	return "drift: " + strings.Join(d, ", ")
}

// snapPriv is the resource's private data: the commit applied, the
// commit planned (apply refuses another), and earlier commits whose
// records are not yet given back. Destroy finds the records by them.
type snapPriv struct {
	Commit  string   `json:"commit,omitempty"`
	Planned string   `json:"planned,omitempty"`
	Others  []string `json:"others,omitempty"`
	// Adopted is a commit found whole that this instance did not write:
	// destroy leaves it.
	Adopted string `json:"adopted,omitempty"`
}

func decodeSnapPriv(b []byte) snapPriv {
	var p snapPriv
	if len(b) > 0 {
		_ = json.Unmarshal(b, &p)
	}
	return p
}

func (p snapPriv) encode() []byte {
	if p.Commit == "" && p.Planned == "" && len(p.Others) == 0 && p.Adopted == "" {
		return nil
	}
	b, _ := json.Marshal(p)
	return b
}

// snapValue builds the object: the configurable attributes of v, the
// numbers of w, and (when known) the listing.
func snapValue(v cty.Value, s *snapSpec, w *snapWork, known bool, relayed cty.Value, summary string) cty.Value {
	vals := make(map[string]cty.Value, len(snapConfigAttrs)+len(snapComputedAttrs))
	for _, a := range snapConfigAttrs {
		vals[a] = v.GetAttr(a)
	}
	vals["file_count"] = cty.NumberIntVal(int64(len(w.Files)))
	vals["total_bytes"] = cty.NumberIntVal(w.Total)
	vals["present_bytes"] = cty.NumberIntVal(w.Present)
	vals["transfer_bytes"] = cty.NumberIntVal(w.Xfer)
	vals["free_bytes"] = cty.NumberIntVal(w.Free)
	vals["relayed_bytes"] = relayed
	vals[SummaryAttribute] = cty.StringVal(summary)
	if !known {
		vals["commit"] = cty.UnknownVal(cty.String)
		vals["snapshot_dir"] = cty.UnknownVal(cty.String)
		vals["files"] = cty.UnknownVal(cty.List(snapFileType))
		return cty.ObjectVal(vals)
	}
	vals["commit"] = cty.StringVal(w.Commit)
	vals["snapshot_dir"] = cty.StringVal(path.Join(s.HubDir, s.repoDir(), "snapshots", w.Commit))
	files := make([]cty.Value, len(w.Files))
	for i, f := range w.Files {
		files[i] = cty.ObjectVal(map[string]cty.Value{"path": cty.StringVal(f.Path), "etag": cty.StringVal(f.Etag), "size": cty.NumberIntVal(f.Size)})
	}
	if len(files) == 0 {
		vals["files"] = cty.ListValEmpty(snapFileType)
	} else {
		vals["files"] = cty.ListVal(files)
	}
	return cty.ObjectVal(vals)
}

// listingFromValue reads the files attribute of a stored value.
func listingFromValue(v cty.Value) (*snapListing, bool) {
	c, fv := ctyval.Attr(v, "commit"), ctyval.Attr(v, "files")
	if !c.IsKnown() || c.IsNull() || !fv.IsWhollyKnown() || fv.IsNull() {
		return nil, false
	}
	l := &snapListing{Commit: c.AsString()}
	for it := fv.ElementIterator(); it.Next(); {
		_, e := it.Element()
		n, _ := e.GetAttr("size").AsBigFloat().Int64()
		l.Files = append(l.Files, snapFile{Path: e.GetAttr("path").AsString(), Etag: e.GetAttr("etag").AsString(), Size: n})
	}
	return l, true
}

// sameConfig reports whether a and b agree on every configurable attribute.
func sameConfig(a, b cty.Value) bool {
	for _, at := range snapConfigAttrs {
		if !sdk.ValuesEqual(a.GetAttr(at), b.GetAttr(at)) {
			return false
		}
	}
	return true
}

// listing returns what the snapshot is: from prior when it pins the same
// commit with the same selection (no request to any source: a present
// pinned snapshot plans with one node command), else from the source.
func (r *snapshot) listing(ctx context.Context, conn node.Conn, src snapSource, s *snapSpec, prior cty.Value) (*snapListing, error) {
	if hex40.MatchString(s.Revision) && !prior.IsNull() && ctyval.Str(ctyval.Attr(prior, "commit")) == s.Revision {
		if ps, err := snapSpecOf(prior); err == nil && strings.Join(ps.Include, "\x00") == strings.Join(s.Include, "\x00") &&
			strings.Join(ps.Exclude, "\x00") == strings.Join(s.Exclude, "\x00") {
			if l, ok := listingFromValue(prior); ok {
				return l, nil
			}
		}
	}
	return src.List(ctx, conn, s)
}

// Read implements sdk.Resource: every instance on the node in ONE remote
// command (sizes and link targets; verify="full" re-hashes). The stored
// object is kept when the snapshot is whole; drift (a missing or short
// blob, a wrong link, a moved ref) updates the numbers and
// change_summary, so the plan shows it and apply repairs it. A snapshot
// with nothing left at all is gone (null).
func (r *snapshot) Read(ctx context.Context, n sdk.Node, items []sdk.ReadItem) ([]sdk.ReadResult, int, sdk.Diagnostics) {
	results := make([]sdk.ReadResult, len(items))
	var reqs []obsReq
	var idx []int
	var lists []*snapListing
	for i, it := range items {
		results[i] = sdk.ReadResult{NewState: it.Prior, Private: it.Private}
		if it.Prior.IsNull() || !it.Prior.IsWhollyKnown() {
			continue
		}
		s, err := snapSpecOf(it.Prior)
		l, ok := listingFromValue(it.Prior)
		if err != nil || !ok {
			continue
		}
		reqs = append(reqs, obsReq{s: s, commit: l.Commit})
		idx = append(idx, i)
		lists = append(lists, l)
	}
	if len(reqs) == 0 {
		return results, 0, nil
	}
	conn, err := r.conn(ctx, n)
	if err != nil {
		return results, 0, sdk.Diagnostics{sdk.FromError("Cannot reach node "+n.Name, err)}
	}
	obs, err := observe(ctx, conn, n.Become, r.recDir, reqs)
	if err != nil {
		return results, 1, sdk.Diagnostics{sdk.FromError("Cannot refresh "+TypeSnapshot+" on "+n.Name, err)}
	}
	for j, i := range idx {
		s, o, prior := reqs[j].s, obs[j], items[i].Prior
		r.keepObs(obsKey(n, s, lists[j].Commit), o)
		w, err := computeWork(s, lists[j], o)
		if err != nil {
			results[i].Diagnostics = sdk.Diagnostics{{Severity: sdk.Warning, Summary: items[i].Address + ": cannot check the snapshot", Detail: err.Error()}}
			continue
		}
		if w.none() {
			continue
		}
		// Nothing of it on the node is gone, unless its restore record is
		// still there (a destroy killed before its last step): then the
		// object stays, so that a destroy run again removes the record
		// and an apply fetches the snapshot again.
		if w.Present == 0 && len(o.Links) == 0 && !o.Record.Has("owner", items[i].Address) {
			results[i].NewState = cty.NullVal(snapSchema.Block.ImpliedType())
			continue
		}
		d := w.drift()
		if w.RefWrite {
			if d == "" {
				d = "drift:"
			} else {
				d += ","
			}
			d += fmt.Sprintf(" refs/%s holds %s", s.Revision, o.Ref)
		}
		if d == "" {
			d = "drift: " + w.summary("the source", true)
		}
		results[i].NewState = ctyval.With(prior, map[string]cty.Value{
			"present_bytes": cty.NumberIntVal(w.Present), "transfer_bytes": cty.NumberIntVal(w.Xfer), "free_bytes": cty.NumberIntVal(w.Free),
			SummaryAttribute: cty.StringVal(d),
		})
	}
	return results, 1, nil
}

// Plan implements sdk.Resource: the listing (one request to the source,
// none for a present pinned commit) and one node command for what is
// present and the free space. A plan that writes leaves commit,
// snapshot_dir and files unknown (dependents then plan after the
// transfer) and says everything in change_summary; a transfer that
// cannot fit is refused here, before any change.
func (r *snapshot) Plan(ctx context.Context, req sdk.PlanRequest) sdk.PlanResponse {
	if req.Proposed.IsNull() {
		return sdk.DefaultPlan(snapSchema, req)
	}
	if req.Offline && !req.Prior.IsNull() && sameConfig(req.Prior, req.Proposed) {
		return sdk.PlanResponse{Planned: req.Prior, PlannedPrivate: req.PriorPrivate}
	}
	if !snapConfigKnown(req.Proposed) || req.Offline {
		vals := req.Proposed.AsValueMap()
		for _, a := range snapComputedAttrs {
			vals[a] = cty.UnknownVal(snapSchema.Block.Attributes[a].Type)
		}
		return sdk.PlanResponse{Planned: cty.ObjectVal(vals), PlannedPrivate: req.PriorPrivate}
	}
	fail := func(summary string, err error) sdk.PlanResponse {
		return sdk.PlanResponse{Diagnostics: sdk.Diagnostics{sdk.FromError(summary, err)}}
	}
	s, err := snapSpecOf(req.Proposed)
	if err != nil {
		return fail("Invalid "+TypeSnapshot, err)
	}
	conn, err := r.conn(ctx, req.Node)
	if err != nil {
		return fail("Cannot reach node "+req.Node.Name, err)
	}
	src, err := sourceOf(r.env(req.Node), s)
	if err != nil {
		return fail("Invalid "+TypeSnapshot, err)
	}
	l, err := r.listing(ctx, conn, src, s, req.Prior)
	if err != nil {
		return fail("Cannot list "+s.RepoID+"@"+s.Revision+" from "+src.Describe(), err)
	}
	o := r.takeObs(obsKey(req.Node, s, l.Commit))
	if o == nil {
		obs, err := observe(ctx, conn, req.Node.Become, r.recDir, []obsReq{{s: s, commit: l.Commit}})
		if err != nil {
			return fail("Cannot look at "+s.HubDir+" on "+req.Node.Name, err)
		}
		o = obs[0]
	}
	w, err := computeWork(s, l, o)
	if err != nil {
		return fail("Cannot plan "+s.RepoID+" on "+req.Node.Name, err)
	}
	if _, ok := src.(*hubSource); ok {
		r.keepPlanned(plannedKey(req.Node, s, l.Commit, src), &plannedEntry{src: src, l: l, o: o, at: time.Now()})
	}
	pp := decodeSnapPriv(req.PriorPrivate)
	pp.Planned = l.Commit
	priv := pp.encode()
	if w.none() && !req.Prior.IsNull() && sameConfig(req.Prior, req.Proposed) && ctyval.Str(ctyval.Attr(req.Prior, "commit")) == l.Commit {
		return sdk.PlanResponse{Planned: req.Prior, PlannedPrivate: priv}
	}
	if err := w.fits(s, req.Node.Name); err != nil {
		return fail("Not enough space for "+s.RepoID+" on "+req.Node.Name, err)
	}
	known := w.none()
	relayed := cty.UnknownVal(cty.Number)
	if known {
		relayed = cty.NumberIntVal(0)
	}
	return sdk.PlanResponse{Planned: snapValue(req.Proposed, s, w, known, relayed, w.summary(src.Describe(), !req.Prior.IsNull())), PlannedPrivate: priv}
}

// exitStderr is the stderr of a command that exited non-zero ("" else).
func exitStderr(err error) string {
	var ee *node.ExitError
	if errors.As(err, &ee) {
		return strings.TrimSpace(ee.Stderr)
	}
	return ""
}
