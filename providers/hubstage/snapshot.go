package hubstage

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/internal/units"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// TypeSnapshot is the resource type that makes a hub snapshot present.
const TypeSnapshot = "hubstage_snapshot"

// snapFileType is one file of the snapshot, as the files attribute lists it.
var snapFileType = cty.Object(map[string]cty.Type{"path": cty.String, "etag": cty.String, "size": cty.Number})

// snapConfigAttrs are the attributes the user sets.
var snapConfigAttrs = []string{"hub_dir", "repo_id", "repo_type", "revision", "include", "exclude", "verify", "parallel", "keep_free",
	"endpoint", "token_env", "source_node", "source_hub_dir", "source_address", "transfer", "source_local_dir"}

// snapComputedAttrs are the attributes the provider sets.
var snapComputedAttrs = []string{"commit", "file_count", "total_bytes", "present_bytes", "transfer_bytes", "free_bytes", "relayed_bytes",
	"snapshot_dir", "files", SummaryAttribute}

var snapSchema = &sdk.ResourceSchema{
	Identity: []string{"hub_dir", "repo_id", "repo_type", "revision"},
	// A transfer killed half way resumes: Read reports the blobs there and
	// the missing ones as a difference, apply fetches only those.
	ResumesCreate: true,
	Description: "One Hugging Face hub repository snapshot made present in a node's hub cache, in exactly the layout " +
		"huggingface_hub writes (blobs/<etag>, snapshots/<commit>/<path> as relative links, refs/<revision> holding the commit), " +
		"fetched by the node itself from the hub, copied from another node, or pushed from the operator's own cache. " +
		"Every blob is verified against its content address before it is named; partial blobs resume. Plan shows the " +
		"commit, the bytes present and to transfer and the free space, and refuses a transfer that cannot fit. Destroy " +
		"removes only what this resource added (a restore record on the node), never a blob another snapshot links to.",
	Block: &sdk.Block{Attributes: map[string]*sdk.Attribute{
		"hub_dir":   {Type: cty.String, Required: true, Description: "The hub cache folder on the node (HF_HUB_CACHE), e.g. \"/var/lib/hf/hub\"; made when missing."},
		"repo_id":   {Type: cty.String, Required: true, Description: "The hub repository, \"ORG/NAME\"."},
		"repo_type": {Type: cty.String, Optional: true, Description: "\"model\" (the default) or \"dataset\"."},
		"revision":  {Type: cty.String, Optional: true, Description: "A ref (default \"main\"; also \"refs/pr/N\") or a 40-hex commit. A ref is written to refs/<revision> last, after every file is in place."},
		"include": {Type: cty.List(cty.String), Optional: true, Description: "Only files whose path matches one of these patterns " +
			"(huggingface_hub allow_patterns semantics, as hubstage_manifest: '*' also matches '/', a trailing '/' means the whole folder)."},
		"exclude":   {Type: cty.List(cty.String), Optional: true, Description: "Leave out files whose path matches one of these patterns (same syntax as include)."},
		"verify":    {Type: cty.String, Optional: true, Description: "What refresh checks: \"size\" (the default: sizes and link targets, one cheap remote command) or \"full\" (re-hash every blob against its content address)."},
		"parallel":  {Type: cty.Number, Optional: true, Description: "How many files are transferred at once (default 8)."},
		"keep_free": {Type: cty.String, Optional: true, Description: "Space to leave free on hub_dir's filesystem (default \"1GiB\"): plan refuses when the bytes to transfer exceed the free space minus this."},
		"endpoint": {Type: cty.String, Optional: true, Description: "The hub source: the hub's base URL (default: the HF_ENDPOINT environment variable of sparkform, else " +
			"\"https://huggingface.co\"). The node fetches from it itself. Used when no other source is set."},
		"token_env": {Type: cty.String, Optional: true, Description: "The NAME of the environment variable of sparkform that holds the hub token (default \"HF_TOKEN\"). " +
			"The value is sent to the node on stdin only: never in a command line, the state, the plan or a log."},
		"source_node": {Type: cty.DynamicPseudoType, Optional: true, Description: "Copy from another node that has the snapshot (a node value, e.g. node.spark[\"a\"]), over the link between the two nodes. " +
			"A direct copy needs no key between the nodes set up by hand: sparkform adds a one-time, restricted key (forced to serve this repository's blobs, expiring) to the authorized_keys of the source's login user for the transfer and removes it afterwards; the source's host key is checked against your known_hosts."},
		"source_hub_dir":   {Type: cty.String, Optional: true, Description: "The hub cache folder on source_node (default hub_dir)."},
		"source_address":   {Type: cty.String, Optional: true, Description: "The address (HOST or HOST:PORT) this node uses to reach source_node's sshd over the cluster link (default: source_node's host and port). Plan checks that this node reaches it and that it presents source_node's host key."},
		"transfer":         {Type: cty.String, Optional: true, Description: "With source_node: \"direct\" (the default: node to node, no byte through sparkform) or \"relay\" (streamed through sparkform, named in the plan)."},
		"source_local_dir": {Type: cty.String, Optional: true, Description: "Push from the operator's own hub cache (e.g. \"~/.cache/huggingface/hub\"), streamed through sparkform."},

		"commit":      {Type: cty.String, Computed: true, Description: "The 40-hex commit the revision resolved to."},
		"file_count":  {Type: cty.Number, Computed: true, Description: "How many files the snapshot holds (after include/exclude)."},
		"total_bytes": {Type: cty.Number, Computed: true, Description: "The sum of the files' sizes (each blob counted once)."},
		"present_bytes": {Type: cty.Number, Computed: true, Volatile: true, Description: "Bytes of the snapshot's blobs already on the node (shared blobs and resumable partial blobs included), when planned " +
			"(an apply does not hold to it: another snapshot applied first may bring shared blobs)."},
		"transfer_bytes": {Type: cty.Number, Computed: true, Volatile: true, Description: "Bytes still to transfer, when planned (an apply does not hold to it, as present_bytes; the fit is checked again)."},
		"free_bytes": {Type: cty.Number, Computed: true, Volatile: true, Description: "Free bytes on hub_dir's filesystem, when planned " +
			"(an apply does not hold to it: other writers move it; the refusal is checked again then)."},
		"relayed_bytes": {Type: cty.Number, Computed: true, Description: "Bytes that passed through the machine running sparkform in the last apply (0 for the hub and a direct copy)."},
		"snapshot_dir":  {Type: cty.String, Computed: true, Description: "hub_dir/models--ORG--NAME/snapshots/<commit>: the folder to give a runtime (or hubstage_manifest)."},
		"files":         {Type: cty.List(snapFileType), Computed: true, Description: "One {path, etag, size} per file, sorted by path. Plans show change_summary instead of this list."},
		SummaryAttribute: {Type: cty.String, Computed: true, Description: "One line: the commit, the file count and size, the source, and any drift found in a snapshot that was there " +
			"(the bytes present and to transfer and the free space are present_bytes, transfer_bytes and free_bytes)."},
	}},
}

// Defaults.
const (
	defaultEndpoint = "https://huggingface.co"
	defaultTokenEnv = "HF_TOKEN"
	defaultParallel = 8
	defaultKeepFree = "1GiB"
	maxParallel     = 64
)

// snapshot implements hubstage_snapshot.
type snapshot struct {
	// conn reaches a node (the provider's pool; tests wrap it).
	conn func(ctx context.Context, n sdk.Node) (node.Conn, error)
	// getenv reads the operator's environment (nil: os.Getenv).
	getenv func(string) string
	// recDir overrides the restore records' base folder (tests).
	recDir string

	// seen holds what Read observed, for the Plan that follows in the same
	// run: a no-op plan costs the refresh's one node command (and, with
	// verify = "full", one re-hash), not a second. Plan takes an entry once.
	mu   sync.Mutex
	seen map[string]*snapObs
	// planned holds what Plan listed and observed (hub source), for the
	// Apply that follows it in the same PlanAndApply: the apply then
	// costs no listing and no observation of its own (two round trips,
	// a fifth of a 4 s transfer). Apply takes an entry once, while fresh.
	planned map[string]*plannedEntry
}

// plannedEntry is what one Plan found.
type plannedEntry struct {
	src snapSource
	l   *snapListing
	o   *snapObs
	at  time.Time
}

// plannedFresh is how long a Plan's findings serve its Apply. The
// receiver checks every blob again before it fetches (a blob that came
// meanwhile is found, not fetched), so an older look costs bytes at
// worst, never a wrong blob.
const plannedFresh = 10 * time.Second

func plannedKey(n sdk.Node, s *snapSpec, commit string, src snapSource) string {
	return obsKey(n, s, commit) + "\x00" + src.Describe()
}

func (r *snapshot) keepPlanned(k string, e *plannedEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.planned == nil {
		r.planned = map[string]*plannedEntry{}
	}
	for k, e := range r.planned {
		if time.Since(e.at) > plannedFresh {
			delete(r.planned, k)
		}
	}
	r.planned[k] = e
}

func (r *snapshot) takePlanned(k string) *plannedEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.planned[k]
	delete(r.planned, k)
	if e == nil || time.Since(e.at) > plannedFresh {
		return nil
	}
	return e
}

func obsKey(n sdk.Node, s *snapSpec, commit string) string {
	return strings.Join([]string{n.Key(), s.HubDir, s.repoDir(), commit, s.Revision, s.Verify}, "\x00")
}

func (r *snapshot) keepObs(k string, o *snapObs) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[string]*snapObs{}
	}
	r.seen[k] = o
}

func (r *snapshot) takeObs(k string) *snapObs {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.seen[k]
	delete(r.seen, k)
	return o
}

var _ sdk.Resource = (*snapshot)(nil)

func (r *snapshot) env(dst sdk.Node) *snapEnv {
	g := r.getenv
	if g == nil {
		g = os.Getenv
	}
	return &snapEnv{conn: r.conn, dst: dst, getenv: g}
}

// Schema implements sdk.Resource.
func (r *snapshot) Schema() *sdk.ResourceSchema { return snapSchema }

// Validate implements sdk.Resource: each known attribute on its own.
func (r *snapshot) Validate(_ context.Context, config cty.Value) sdk.Diagnostics {
	if config.IsNull() || !config.IsKnown() {
		return nil
	}
	c := &configCheck{config: config}
	c.repo()
	bad, str := c.bad, c.str
	if v, ok := str("verify"); ok {
		bad("verify", checkVerify(v))
	}
	if v, ok := str("keep_free"); ok {
		_, err := parseKeepFree(v)
		bad("keep_free", err)
	}
	if v := config.GetAttr("parallel"); v.IsKnown() && !v.IsNull() {
		_, err := parseParallel(v)
		bad("parallel", err)
	}
	if v, ok := str("endpoint"); ok {
		bad("endpoint", checkEndpoint(v))
	}
	if v, ok := str("token_env"); ok {
		bad("token_env", checkTokenEnv(v))
	}
	if v, ok := str("transfer"); ok && v != "direct" && v != "relay" {
		bad("transfer", fmt.Errorf("transfer %q: use \"direct\" or \"relay\"", v))
	}
	if v, ok := str("source_hub_dir"); ok {
		bad("source_hub_dir", checkNodePath("source_hub_dir", v))
	}
	set := 0
	for _, a := range []string{"source_node", "source_local_dir"} {
		if v := config.GetAttr(a); v.IsKnown() && !v.IsNull() {
			set++
		}
	}
	if set > 1 {
		bad("source_local_dir", fmt.Errorf("%w: set one source: source_node or source_local_dir (or neither, for the hub)", ErrBadConfig))
	}
	return c.diags
}

func checkVerify(v string) error {
	if v != "size" && v != "full" {
		return fmt.Errorf("%w: verify %q: use \"size\" (sizes and links) or \"full\" (re-hash every blob)", ErrBadConfig, v)
	}
	return nil
}

func parseKeepFree(v string) (int64, error) {
	n, err := units.ParseBytes(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: keep_free %q: give a size such as \"1GiB\" or \"500MB\" (or \"0\")", ErrBadConfig, v)
	}
	return n, nil
}

func parseParallel(v cty.Value) (int, error) {
	bf := v.AsBigFloat()
	n, acc := bf.Int64()
	if !bf.IsInt() || acc != 0 || n < 1 || n > maxParallel {
		return 0, fmt.Errorf("%w: parallel %s: give a whole number from 1 to %d", ErrBadConfig, bf.Text('g', -1), maxParallel)
	}
	return int(n), nil
}

func checkEndpoint(v string) error {
	if !(strings.HasPrefix(v, "https://") || strings.HasPrefix(v, "http://")) || strings.ContainsAny(v, " \t\n\"\\'`$") || len(v) < 10 {
		return fmt.Errorf("%w: endpoint %q: give the hub's base URL, such as \"https://huggingface.co\"", ErrBadConfig, v)
	}
	return nil
}

func checkTokenEnv(v string) error {
	for i, c := range v {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return fmt.Errorf("%w: token_env %q: give the NAME of an environment variable, such as \"HF_TOKEN\" (not the token itself)", ErrBadConfig, v)
		}
	}
	if v == "" {
		return fmt.Errorf("%w: token_env is empty: give the NAME of an environment variable, such as \"HF_TOKEN\"", ErrBadConfig)
	}
	return nil
}

// snapSpecOf reads the configurable attributes of v with the defaults
// applied, and checks them.
func snapSpecOf(v cty.Value) (*snapSpec, error) {
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
	s := &snapSpec{
		HubDir: str("hub_dir", ""), RepoID: str("repo_id", ""), RepoType: str("repo_type", "model"),
		Revision: str("revision", "main"), Include: list("include"), Exclude: list("exclude"),
		Verify: str("verify", "size"), Parallel: defaultParallel,
		Endpoint: str("endpoint", ""), TokenEnv: str("token_env", defaultTokenEnv),
		SourceNode: v.GetAttr("source_node"), SourceHubDir: str("source_hub_dir", ""), SourceAddress: str("source_address", ""),
		Transfer: str("transfer", "direct"), SourceLocalDir: str("source_local_dir", ""),
	}
	if s.SourceHubDir == "" {
		s.SourceHubDir = s.HubDir
	}
	if err := checkNodePath("hub_dir", s.HubDir); err != nil {
		return nil, err
	}
	if err := checkRepoID(s.RepoID); err != nil {
		return nil, err
	}
	if s.RepoType != "model" && s.RepoType != "dataset" {
		return nil, fmt.Errorf("%w: repo_type %q: use \"model\" or \"dataset\"", ErrBadConfig, s.RepoType)
	}
	if err := checkRevision(s.Revision); err != nil {
		return nil, err
	}
	if err := checkVerify(s.Verify); err != nil {
		return nil, err
	}
	kf, err := parseKeepFree(str("keep_free", defaultKeepFree))
	if err != nil {
		return nil, err
	}
	s.KeepFree = kf
	if p := v.GetAttr("parallel"); !p.IsNull() {
		if s.Parallel, err = parseParallel(p); err != nil {
			return nil, err
		}
	}
	if s.Endpoint != "" {
		if err := checkEndpoint(s.Endpoint); err != nil {
			return nil, err
		}
	}
	if err := checkTokenEnv(s.TokenEnv); err != nil {
		return nil, err
	}
	if s.Transfer != "direct" && s.Transfer != "relay" {
		return nil, fmt.Errorf("%w: transfer %q: use \"direct\" or \"relay\"", ErrBadConfig, s.Transfer)
	}
	if !s.SourceNode.IsNull() && s.SourceLocalDir != "" {
		return nil, fmt.Errorf("%w: set one source: source_node or source_local_dir (or neither, for the hub)", ErrBadConfig)
	}
	if s.include, err = compileGlobs("include", s.Include); err != nil {
		return nil, err
	}
	if s.exclude, err = compileGlobs("exclude", s.Exclude); err != nil {
		return nil, err
	}
	return s, nil
}

func snapConfigKnown(v cty.Value) bool {
	for _, a := range snapConfigAttrs {
		if !v.GetAttr(a).IsWhollyKnown() {
			return false
		}
	}
	return true
}

// Import implements sdk.Resource: a snapshot is declared, not adopted.
func (r *snapshot) Import(context.Context, sdk.ImportRequest) sdk.ImportResponse {
	return sdk.ImportUnsupported(TypeSnapshot + " (declare it and apply: a present snapshot costs no transfer)")
}
