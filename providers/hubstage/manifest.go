package hubstage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/internal/ctyval"
	"github.com/sparkform/sparkform/providers/internal/units"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// manifest implements hubstage_manifest.
type manifest struct {
	// conn reaches a node (the provider's pool; tests wrap it).
	conn func(ctx context.Context, n sdk.Node) (node.Conn, error)

	// read holds what Read resolved, by node and spec, for the Plan that
	// follows it in the same run: a no-op plan costs the one remote
	// command of the refresh, not one more per instance. Plan takes an
	// entry once; a later Plan of the same instance (apply's re-plan)
	// resolves on the node again.
	mu   sync.Mutex
	read map[string]*resolution
}

// readKey identifies a resolution: the node's connection and the spec.
func readKey(n sdk.Node, s *spec) string {
	b, _ := json.Marshal(s)
	return n.Key() + "\x00" + string(b)
}

// takeRead returns (and forgets) what Read resolved for s on n, or nil.
func (m *manifest) takeRead(n sdk.Node, s *spec) *resolution {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := readKey(n, s)
	res := m.read[k]
	delete(m.read, k)
	return res
}

var _ sdk.Resource = (*manifest)(nil)

// configAttrs are the attributes the user sets.
var configAttrs = []string{"hub_dir", "repo_id", "repo_type", "revision", "target", "include", "exclude", "manifest_path"}

// computedAttrs are the attributes the provider sets.
var computedAttrs = []string{"commit", "files", "file_count", "total_bytes", "digest", "manifest_sha256", SummaryAttribute}

var schema = &sdk.ResourceSchema{
	// What an instance manages on its node: two instances with the same
	// value on one node are refused at plan.
	Identity: []string{"manifest_path"},
	Description: "A per-file bind manifest of a Hugging Face hub snapshot, resolved on the node: every file of " +
		"snapshots/<commit> followed through its relative symlinks (repo blobs and the hub-level shared blob store) " +
		"to the real regular file, so a container can bind each one as a regular file (runtimes that open files " +
		"with O_NOFOLLOW refuse symlinks). Refresh re-resolves the ref; a moved ref or a changed blob plans an update.",
	Block: &sdk.Block{Attributes: map[string]*sdk.Attribute{
		"hub_dir":   {Type: cty.String, Required: true, Description: "The hub cache folder on the node (HF_HUB_CACHE), e.g. \"/mnt/nas/ai/huggingface/hub\". Every source must lie inside it."},
		"repo_id":   {Type: cty.String, Required: true, Description: "The hub repository, \"ORG/NAME\"."},
		"repo_type": {Type: cty.String, Optional: true, Description: "\"model\" (the default: models--ORG--NAME) or \"dataset\" (datasets--ORG--NAME)."},
		"revision": {Type: cty.String, Optional: true, Description: "A ref name read from refs/<revision> (default \"main\"; also \"refs/pr/N\") or a 40-hex commit used as is. " +
			"To bind a snapshot a hubstage_snapshot puts on the node, give its commit (revision = hubstage_snapshot.NAME.commit, with hub_dir and repo_id from it): " +
			"the manifest then plans after the transfer (known after apply) and follows the snapshot's commit, with no shared folder."},
		"target": {Type: cty.String, Required: true, Description: "The clean absolute container folder the files are bound under, e.g. \"/model\"."},
		"include": {Type: cty.List(cty.String), Optional: true, Description: "Only files whose snapshot-relative path matches one of these patterns " +
			"(huggingface_hub allow_patterns semantics: '*' also matches '/', a trailing '/' means the whole folder)."},
		"exclude":       {Type: cty.List(cty.String), Optional: true, Description: "Leave out files whose snapshot-relative path matches one of these patterns (same syntax as include)."},
		"manifest_path": {Type: cty.String, Optional: true, Description: "A file on the node written atomically with one \"REAL<TAB>TARGET\" line per file, for tools that read the seed's extra_mounts_manifest. Destroy removes it only if this resource wrote it and it is unchanged."},

		"commit":          {Type: cty.String, Computed: true, Description: "The resolved 40-hex commit."},
		"files":           {Type: cty.List(fileType), Computed: true, Description: "One {source, target} per file, sorted by target: the real blob on the node and its container path; give it to docker_container.bind_files. Plans show change_summary instead of this list."},
		"file_count":      {Type: cty.Number, Computed: true, Description: "How many files."},
		"total_bytes":     {Type: cty.Number, Computed: true, Description: "The sum of the files' sizes."},
		"digest":          {Type: cty.String, Computed: true, Description: "sha256 of the entries (source, target, size, mtime): changes when any file moves, is added, removed or replaced."},
		"manifest_sha256": {Type: cty.String, Computed: true, Description: "sha256 of the manifest_path file as found on the node (null when manifest_path is unset or the file is missing)."},
		SummaryAttribute: {Type: cty.String, Computed: true, Description: "A one-line summary of the last planned or applied change of files " +
			"(\"commit a -> b, +N files, -M files, K changed\"); plan renderers show it instead of the files list."},
	}},
}

// Schema implements sdk.Resource.
func (m *manifest) Schema() *sdk.ResourceSchema { return schema }

// Validate implements sdk.Resource: every known attribute is checked on
// its own, so a config with unknowns still gets its other errors.
func (m *manifest) Validate(_ context.Context, config cty.Value) sdk.Diagnostics {
	if config.IsNull() || !config.IsKnown() {
		return nil
	}
	c := &configCheck{config: config}
	c.repo()
	bad, str := c.bad, c.str
	if v, ok := str("target"); ok {
		bad("target", checkTarget(v))
	}
	if v, ok := str("manifest_path"); ok {
		s := spec{ManifestPath: v}
		err := checkNodePath("manifest_path", v)
		if err == nil && (v == "/" || strings.HasSuffix(v, "/")) {
			err = fmt.Errorf("manifest_path %q names a folder; give a file path such as /tmp/model-mounts.txt", s.ManifestPath)
		}
		bad("manifest_path", err)
	}
	return c.diags
}

// specOf reads the configurable attributes of v (config, planned or prior
// state) with the defaults applied, and checks them.
func specOf(v cty.Value) (*spec, error) {
	str := func(attr, def string) string {
		a := v.GetAttr(attr)
		if a.IsNull() {
			return def
		}
		return a.AsString()
	}
	list := func(attr string) []string {
		a := v.GetAttr(attr)
		if a.IsNull() {
			return nil
		}
		var out []string
		for it := a.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			if !ev.IsNull() {
				out = append(out, ev.AsString())
			}
		}
		return out
	}
	s := &spec{
		HubDir: str("hub_dir", ""), RepoID: str("repo_id", ""), RepoType: str("repo_type", "model"),
		Revision: str("revision", "main"), Target: str("target", ""),
		Include: list("include"), Exclude: list("exclude"), ManifestPath: str("manifest_path", ""),
	}
	return s, s.check()
}

func configKnown(v cty.Value) bool {
	for _, a := range configAttrs {
		if !v.GetAttr(a).IsWhollyKnown() {
			return false
		}
	}
	return true
}

// value builds the object for spec source v (its configurable attributes
// are kept as given) and a resolution.
func value(v cty.Value, res *resolution, s *spec, summary string) cty.Value {
	vals := make(map[string]cty.Value, len(configAttrs)+len(computedAttrs))
	for _, a := range configAttrs {
		vals[a] = v.GetAttr(a)
	}
	files := make([]cty.Value, len(res.Entries))
	for i, e := range res.Entries {
		files[i] = cty.ObjectVal(map[string]cty.Value{"source": cty.StringVal(e.Source), "target": cty.StringVal(e.Target)})
	}
	if len(files) == 0 {
		vals["files"] = cty.ListValEmpty(fileType)
	} else {
		vals["files"] = cty.ListVal(files)
	}
	vals["commit"] = cty.StringVal(res.Commit)
	vals["file_count"] = cty.NumberIntVal(int64(len(res.Entries)))
	vals["total_bytes"] = cty.NumberIntVal(res.TotalBytes)
	vals["digest"] = cty.StringVal(res.Digest)
	vals["manifest_sha256"] = cty.NullVal(cty.String)
	if s.ManifestPath != "" {
		vals["manifest_sha256"] = cty.StringVal(sha256Hex(FormatManifest(res.Entries)))
	}
	vals[SummaryAttribute] = cty.StringVal(summary)
	return cty.ObjectVal(vals)
}

// resolveOne resolves a single spec on n: one remote command.
func (m *manifest) resolveOne(ctx context.Context, n sdk.Node, s *spec) (*resolution, error) {
	conn, err := m.conn(ctx, n)
	if err != nil {
		return nil, err
	}
	raws, _, err := runResolve(ctx, conn, n, []*spec{s})
	if err != nil {
		return nil, err
	}
	return build(s, raws[0])
}

// Read implements sdk.Resource: every instance on the node is re-resolved
// in ONE remote command. The stored object (what consumers were given) is
// kept; what is observed is reported as facts: manifest_sha256 as found,
// and change_summary saying how the hub now differs. A hub that no longer
// resolves is a warning here; plan then refuses it with the full error.
func (m *manifest) Read(ctx context.Context, n sdk.Node, items []sdk.ReadItem) ([]sdk.ReadResult, int, sdk.Diagnostics) {
	results := make([]sdk.ReadResult, len(items))
	var specs []*spec
	var idx []int
	for i, it := range items {
		results[i] = sdk.ReadResult{NewState: it.Prior, Private: it.Private}
		if it.Prior.IsNull() || !it.Prior.IsWhollyKnown() {
			continue
		}
		s, err := specOf(it.Prior)
		if err != nil {
			results[i].Diagnostics = sdk.Diagnostics{{Severity: sdk.Warning, Summary: "Cannot refresh " + it.Address, Detail: err.Error()}}
			continue
		}
		specs = append(specs, s)
		idx = append(idx, i)
	}
	if len(specs) == 0 {
		return results, 0, nil
	}
	conn, err := m.conn(ctx, n)
	if err != nil {
		return results, 0, sdk.Diagnostics{sdk.FromError("Cannot reach node "+n.Name, err)}
	}
	raws, trips, err := runResolve(ctx, conn, n, specs)
	if err != nil {
		return results, trips, sdk.Diagnostics{sdk.FromError("Cannot refresh hubstage_manifest on "+n.Name, err)}
	}
	for j, i := range idx {
		prior := items[i].Prior
		res, err := build(specs[j], raws[j])
		obs := cty.NullVal(cty.String)
		if specs[j].ManifestPath != "" && res.ManifestSHA != "" {
			obs = cty.StringVal(res.ManifestSHA)
		}
		set := map[string]cty.Value{"manifest_sha256": obs}
		if err == nil {
			m.mu.Lock()
			if m.read == nil {
				m.read = map[string]*resolution{}
			}
			m.read[readKey(n, specs[j])] = res
			m.mu.Unlock()
		}
		if err != nil {
			results[i].Diagnostics = sdk.Diagnostics{{Severity: sdk.Warning, Summary: items[i].Address + ": the hub no longer resolves", Detail: err.Error()}}
		} else if res.Digest != ctyval.Str(ctyval.Attr(prior, "digest")) || res.Commit != ctyval.Str(ctyval.Attr(prior, "commit")) {
			set[SummaryAttribute] = cty.StringVal(summarize(prior, res, false))
		}
		results[i].NewState = ctyval.With(prior, set)
	}
	return results, trips, nil
}

// Plan implements sdk.Resource: with a known config it resolves on the
// node (one command) so files are known at plan time and dependents can
// plan against them; a changed resolution is an in-place update whose
// change_summary says what moved.
func (m *manifest) Plan(ctx context.Context, req sdk.PlanRequest) sdk.PlanResponse {
	if req.Proposed.IsNull() {
		return sdk.DefaultPlan(schema, req)
	}
	if req.Offline && !req.Prior.IsNull() {
		// -refresh=false plans from state alone: nothing is read on the
		// node. Unchanged arguments keep the stored object; changed ones
		// leave what the hub holds to apply.
		same := true
		for _, a := range configAttrs {
			if !sdk.ValuesEqual(req.Prior.GetAttr(a), req.Proposed.GetAttr(a)) {
				same = false
			}
		}
		if same {
			return sdk.PlanResponse{Planned: req.Prior, PlannedPrivate: req.PriorPrivate}
		}
	}
	if !configKnown(req.Proposed) || req.Offline {
		vals := req.Proposed.AsValueMap()
		for _, a := range computedAttrs {
			vals[a] = cty.UnknownVal(schema.Block.Attributes[a].Type)
		}
		return sdk.PlanResponse{Planned: cty.ObjectVal(vals), PlannedPrivate: req.PriorPrivate}
	}
	s, err := specOf(req.Proposed)
	if err != nil {
		return sdk.PlanResponse{Diagnostics: sdk.Diagnostics{sdk.FromError("Invalid hubstage_manifest", err)}}
	}
	res := m.takeRead(req.Node, s)
	if res == nil {
		if res, err = m.resolveOne(ctx, req.Node, s); err != nil {
			return sdk.PlanResponse{Diagnostics: sdk.Diagnostics{sdk.FromError("Cannot resolve "+s.RepoID+" on "+req.Node.Name, err)}}
		}
	}
	prior := req.Prior
	if !prior.IsNull() {
		same := res.Digest == ctyval.Str(ctyval.Attr(prior, "digest")) && res.Commit == ctyval.Str(ctyval.Attr(prior, "commit"))
		for _, a := range configAttrs {
			if !sdk.ValuesEqual(prior.GetAttr(a), req.Proposed.GetAttr(a)) {
				same = false
			}
		}
		stale := s.ManifestPath != "" && ctyval.Str(ctyval.Attr(prior, "manifest_sha256")) != sha256Hex(FormatManifest(res.Entries))
		if same && !stale {
			return sdk.PlanResponse{Planned: prior, PlannedPrivate: req.PriorPrivate}
		}
		// Only say the manifest is rewritten when nothing else explains it.
		sameFiles := res.Digest == ctyval.Str(ctyval.Attr(prior, "digest"))
		return sdk.PlanResponse{Planned: value(req.Proposed, res, s, summarize(prior, res, stale && sameFiles)), PlannedPrivate: req.PriorPrivate}
	}
	return sdk.PlanResponse{Planned: value(req.Proposed, res, s, summarize(prior, res, false)), PlannedPrivate: req.PriorPrivate}
}

// private is what Apply records to undo: the manifest file it wrote.
type private struct {
	ManifestPath   string `json:"manifest_path,omitempty"`
	ManifestSHA256 string `json:"manifest_sha256,omitempty"`
	// Wrote is true when this resource wrote the file (false: an identical
	// file was already there, and destroy leaves it).
	Wrote bool `json:"wrote,omitempty"`
}

// owned is the sha256 of the file this resource wrote ("" none).
func (p private) owned() string {
	if !p.Wrote {
		return ""
	}
	return p.ManifestSHA256
}

func decodePrivate(b []byte) (private, error) {
	var p private
	if len(b) == 0 {
		return p, nil
	}
	err := json.Unmarshal(b, &p)
	return p, err
}

func (p private) encode() []byte {
	if p == (private{}) {
		return nil
	}
	b, _ := json.Marshal(p)
	return b
}

// Apply implements sdk.Resource.
func (m *manifest) Apply(ctx context.Context, req sdk.ApplyRequest, progress func(sdk.Progress)) sdk.ApplyResponse {
	start := time.Now()
	fail := func(summary string, err error) sdk.ApplyResponse {
		return sdk.ApplyResponse{NewState: req.Prior, Private: req.Private, Diagnostics: sdk.Diagnostics{sdk.FromError(summary, err)}}
	}
	priv, err := decodePrivate(req.Private)
	if err != nil {
		return fail("Corrupt private data for "+req.Address, err)
	}
	conn, err := m.conn(ctx, req.Node)
	if err != nil {
		return fail("Cannot reach node "+req.Node.Name, err)
	}
	if req.Planned.IsNull() { // destroy
		// The path from private data, else from the value: a create whose
		// reply was lost has no private data, and its record on the node
		// says whether the file there is its own.
		mp := priv.ManifestPath
		if mp == "" && !req.Prior.IsNull() {
			if v := req.Prior.GetAttr("manifest_path"); v.IsKnown() && !v.IsNull() && checkNodePath("manifest_path", v.AsString()) == nil {
				mp = v.AsString()
			}
		}
		if mp != "" {
			progress(sdk.Progress{Message: "removing " + mp, Elapsed: time.Since(start)})
			kept, err := removeManifest(ctx, conn, req.Node.Become, mp, priv.owned())
			if err != nil {
				return fail("Cannot remove manifest_path", err)
			}
			if kept != "" {
				return sdk.ApplyResponse{NewState: cty.NullVal(schema.Block.ImpliedType()), Diagnostics: sdk.Diagnostics{{Severity: sdk.Warning,
					Summary: "manifest_path left in place", Detail: kept}}}
			}
		}
		return sdk.ApplyResponse{NewState: cty.NullVal(schema.Block.ImpliedType())}
	}
	s, err := specOf(req.Planned)
	if err != nil {
		return fail("Invalid hubstage_manifest", err)
	}
	progress(sdk.Progress{Message: "resolving " + s.RepoID + "@" + s.Revision, Elapsed: time.Since(start)})
	raws, _, err := runResolve(ctx, conn, req.Node, []*spec{s})
	if err != nil {
		return fail("Cannot resolve "+s.RepoID+" on "+req.Node.Name, err)
	}
	res, err := build(s, raws[0])
	if err != nil {
		return fail("Cannot resolve "+s.RepoID+" on "+req.Node.Name, err)
	}
	progress(sdk.Progress{Message: fmt.Sprintf("resolved %d files at %s", len(res.Entries), short(res.Commit)),
		Current: int64(len(res.Entries)), Total: int64(len(res.Entries)), Elapsed: time.Since(start)})
	if d := req.Planned.GetAttr("digest"); d.IsKnown() && !d.IsNull() && d.AsString() != res.Digest {
		return fail("Cannot apply "+req.Address, fmt.Errorf("%w: %s now resolves to commit %s with digest %s, not the planned %s; run plan again",
			ErrChanged, s.RepoID, short(res.Commit), res.Digest, d.AsString()))
	}
	summary := ""
	if v := req.Planned.GetAttr(SummaryAttribute); v.IsKnown() && !v.IsNull() {
		summary = v.AsString()
	} else {
		summary = summarize(req.Prior, res, false)
	}
	newPriv := private{}
	var diags sdk.Diagnostics
	if s.ManifestPath != "" {
		content := FormatManifest(res.Entries)
		want := sha256Hex(content)
		owned := ""
		if priv.ManifestPath == s.ManifestPath {
			owned = priv.owned()
		}
		progress(sdk.Progress{Message: "writing " + s.ManifestPath, Elapsed: time.Since(start)})
		wrote, err := writeManifest(ctx, conn, req.Node.Become, s.ManifestPath, content, want, owned)
		if err != nil {
			resp := fail("Cannot write manifest_path", err)
			if req.Prior.IsNull() && !errors.Is(err, ErrForeignManifest) {
				// The write may have happened (a dropped link hides its
				// answer), and its restore record says so: kept in state
				// (tainted, as a failed create is) rather than forgotten,
				// so that destroy, or the next apply's replacement,
				// removes the file, the folders made for it and the
				// record. Wrote is false: the record alone decides.
				resp.NewState = value(req.Planned, res, s, summary)
				resp.Private = private{ManifestPath: s.ManifestPath, ManifestSHA256: want}.encode()
			}
			return resp
		}
		newPriv = private{ManifestPath: s.ManifestPath, ManifestSHA256: want, Wrote: wrote}
	}
	if priv.ManifestPath != "" && priv.ManifestPath != s.ManifestPath {
		kept, err := removeManifest(ctx, conn, req.Node.Become, priv.ManifestPath, priv.owned())
		if err != nil || kept != "" {
			detail := kept
			if err != nil {
				detail = err.Error()
			}
			diags = append(diags, sdk.Diagnostic{Severity: sdk.Warning, Summary: "Old manifest_path left in place", Detail: detail})
		}
	}
	return sdk.ApplyResponse{NewState: value(req.Planned, res, s, summary), Private: newPriv.encode(), Diagnostics: diags}
}

// Import implements sdk.Resource: a manifest is derived from config, so
// there is nothing on the node to adopt; create it instead.
func (m *manifest) Import(context.Context, sdk.ImportRequest) sdk.ImportResponse {
	return sdk.ImportUnsupported(TypeManifest + " (it is derived from the hub: declare it and apply)")
}

func short(commit string) string {
	if len(commit) > 7 {
		return commit[:7]
	}
	return commit
}

// summarize says in one line how res differs from prior (null: create).
func summarize(prior cty.Value, res *resolution, manifestStale bool) string {
	if prior.IsNull() || !prior.IsWhollyKnown() {
		return fmt.Sprintf("commit %s: %d files, %s", short(res.Commit), len(res.Entries), units.Human(res.TotalBytes))
	}
	old := map[string]string{}
	if fv := prior.GetAttr("files"); !fv.IsNull() {
		for it := fv.ElementIterator(); it.Next(); {
			_, e := it.Element()
			old[e.GetAttr("target").AsString()] = e.GetAttr("source").AsString()
		}
	}
	added, changed := 0, 0
	for _, e := range res.Entries {
		src, ok := old[e.Target]
		switch {
		case !ok:
			added++
		case src != e.Source:
			changed++
		}
		delete(old, e.Target)
	}
	removed := len(old)
	var parts []string
	if pc := ctyval.Str(ctyval.Attr(prior, "commit")); pc != res.Commit {
		parts = append(parts, "commit "+short(pc)+" -> "+short(res.Commit))
	} else {
		parts = append(parts, "commit "+short(res.Commit))
	}
	parts = append(parts, fmt.Sprintf("+%d files, -%d files, %d changed", added, removed, changed))
	if added+removed+changed == 0 && res.Digest != ctyval.Str(ctyval.Attr(prior, "digest")) {
		parts = append(parts, "blob contents replaced in place")
	}
	if manifestStale {
		parts = append(parts, "manifest_path rewritten")
	}
	return strings.Join(parts, ", ")
}
