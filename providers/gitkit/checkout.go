package gitkit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/internal/restore"
	"github.com/sparkform/sparkform/providers/node"
	"github.com/sparkform/sparkform/providers/sdk"
)

// Checkout implements the gitkit_checkout resource type.
type Checkout struct {
	pool *node.Pool
}

var _ sdk.Resource = (*Checkout)(nil)

// NewCheckout returns the resource type, reaching nodes through pool.
func NewCheckout(pool *node.Pool) *Checkout { return &Checkout{pool: pool} }

const (
	attrRepo   = "repo"
	attrCommit = "commit"
	attrSubdir = "subdir"
	attrPath   = "path"
	attrDigest = "tree_digest"
)

var checkoutSchema = &sdk.ResourceSchema{
	// What an instance manages on its node: two instances with the same
	// value on one node are refused at plan.
	Identity:    []string{"path"},
	Version:     1,
	Description: "One folder of a git repository at a pinned commit, staged at an absolute path on the node. Edits on the node are drift: the next apply re-stages the tree.",
	Block: &sdk.Block{Attributes: map[string]*sdk.Attribute{
		attrRepo: {Type: cty.String, Required: true, ForceNew: true,
			Description: "Repository URL or path, as the node reaches it (https://..., file://..., /srv/git/kit.git, user@host:repo.git). Fetched by the node, not by sparkform."},
		attrCommit: {Type: cty.String, Required: true, ForceNew: true,
			Description: "The full 40-hex commit id to check out. Branches, tags and short ids are refused: they can move or be ambiguous."},
		attrSubdir: {Type: cty.String, Optional: true, ForceNew: true,
			Description: "Folder of the repository (relative, e.g. \"release/runtime\") that becomes `path`. Omit to stage the whole tree without .git."},
		attrPath: {Type: cty.String, Required: true, ForceNew: true,
			Description: "Absolute path on the node where the tree is staged. It must not exist before the first apply: sparkform never creates over files it did not put there. Missing parent folders are created, and destroy removes them again while they are empty."},
		attrDigest: {Type: cty.String, Computed: true,
			Description: "\"sha256:HEX\" of what is at `path` (relative paths, kinds, exec bits, symlink targets, content hashes), computed on the node. A change on the node shows as drift. \"(absent; its restore record is still on the node)\" when the tree is gone but the record of the folders sparkform made for it is not (a destroy cut short): apply stages the tree again, destroy finishes removing them."},
	}},
}

// Schema implements sdk.Resource.
func (c *Checkout) Schema() *sdk.ResourceSchema { return checkoutSchema }

var commitRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

// knownString returns v's string and whether it is known and not null.
func knownString(v cty.Value, attr string) (string, bool) {
	a := v.GetAttr(attr)
	if !a.IsKnown() || a.IsNull() {
		return "", false
	}
	return a.AsString(), true
}

// str returns the string at attr, "" when null or unknown.
func str(v cty.Value, attr string) string {
	s, _ := knownString(v, attr)
	return s
}

// Validate implements sdk.Resource: every known value is checked; unknown
// values (from resources not yet created) pass.
func (c *Checkout) Validate(_ context.Context, config cty.Value) sdk.Diagnostics {
	if config.IsNull() || !config.IsKnown() {
		return nil
	}
	var diags sdk.Diagnostics
	for _, name := range []string{attrRepo, attrCommit, attrPath} {
		a := config.GetAttr(name)
		if a.IsKnown() && a.IsNull() {
			diags = append(diags, sdk.Errorf(sdk.AttrPath(name), "Missing "+name, "gitkit_checkout needs %q.", name))
		}
	}
	if s, ok := knownString(config, attrRepo); ok {
		if err := checkRepo(s); err != nil {
			diags = append(diags, sdk.Errorf(sdk.AttrPath(attrRepo), "Invalid repo", "%s", err))
		}
	}
	if s, ok := knownString(config, attrCommit); ok {
		if err := checkCommit(s); err != nil {
			diags = append(diags, sdk.Errorf(sdk.AttrPath(attrCommit), "Invalid commit", "%s", err))
		}
	}
	if s, ok := knownString(config, attrSubdir); ok {
		if err := checkSubdir(s); err != nil {
			diags = append(diags, sdk.Errorf(sdk.AttrPath(attrSubdir), "Invalid subdir", "%s", err))
		}
	}
	if s, ok := knownString(config, attrPath); ok {
		if err := checkPath(s); err != nil {
			diags = append(diags, sdk.Errorf(sdk.AttrPath(attrPath), "Invalid path", "%s", err))
		}
	}
	return diags
}

func checkRepo(s string) error {
	switch {
	case strings.TrimSpace(s) == "":
		return errors.New("repo is empty; give a URL or path the node can fetch from")
	case strings.HasPrefix(s, "-"):
		return fmt.Errorf("repo %q starts with '-' and would be read as a git option", s)
	case strings.ContainsAny(s, "\x00\n\r"):
		return fmt.Errorf("repo %q contains a control character", s)
	}
	return nil
}

func checkCommit(s string) error {
	if commitRE.MatchString(s) {
		return nil
	}
	return fmt.Errorf("commit must be a full 40-character lowercase hex commit id "+
		"(e.g. 878e0eecd893fadc69ad2d58b2df0fabb0fae2ee), got %q; short ids, branches and "+
		"tags are refused because they can move or be ambiguous: run `git rev-parse %s` to get the full id", s, s)
}

func checkSubdir(s string) error {
	switch {
	case s == "" || s == ".":
		return errors.New("subdir is empty; omit it to stage the whole tree")
	case strings.HasPrefix(s, "/"):
		return fmt.Errorf("subdir %q must be relative to the repository root (e.g. \"release/runtime\")", s)
	case strings.ContainsAny(s, "\x00\n\r"):
		return fmt.Errorf("subdir %q contains a control character", s)
	case path.Clean(s) != s:
		return fmt.Errorf("subdir %q is not a clean path; write %q", s, path.Clean(s))
	}
	for _, el := range strings.Split(s, "/") {
		if el == ".." {
			return fmt.Errorf("subdir %q leaves the repository (a \"..\" element)", s)
		}
		if el == ".git" {
			return fmt.Errorf("subdir %q points into .git", s)
		}
	}
	return nil
}

func checkPath(s string) error {
	switch {
	case !strings.HasPrefix(s, "/"):
		return fmt.Errorf("path %q must be absolute (e.g. /home/USER/kit)", s)
	case strings.ContainsAny(s, "\x00\n\r"):
		return fmt.Errorf("path %q contains a control character", s)
	case path.Clean(s) != s:
		return fmt.Errorf("path %q is not a clean path; write %q", s, path.Clean(s))
	case s == "/":
		return errors.New("path must not be / (it would be replaced by the checkout)")
	}
	return nil
}

// private is the private data stored beside the value.
type private struct {
	// TreeDigest is the digest the staged commit had when applied: what
	// the tree must look like. Read's observed digest is compared with it.
	TreeDigest string `json:"tree_digest"`
	// Made lists the ancestors of path that a create of this path made
	// (mkdir -p), so destroy can remove them again while they are empty.
	// Absent in private data written before it existed: made nothing.
	Made []string `json:"made,omitempty"`
}

func decodePrivate(b []byte) private {
	var p private
	if len(b) > 0 {
		_ = json.Unmarshal(b, &p) // unreadable private data: treated as "no record" (re-stage)
	}
	return p
}

func (p private) encode() []byte {
	b, _ := json.Marshal(p)
	return b
}

// mergeMade is the union of a and b, keeping the order of first sight.
func mergeMade(a, b []string) []string {
	out := slices.Clone(a)
	for _, d := range b {
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// madeToRemove is the folders of made that destroy may rmdir for a
// checkout at p: only proper ancestors of p (private data is not trusted
// to name anything else), deepest first.
func madeToRemove(p string, made []string) []string {
	var out []string
	for _, d := range made {
		if checkPath(d) == nil && strings.HasPrefix(p, d+"/") && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

func withDigest(v cty.Value, digest cty.Value) cty.Value {
	m := v.AsValueMap()
	m[attrDigest] = digest
	return cty.ObjectVal(m)
}

// observation is what read.sh saw at one path.
type observation struct {
	absent bool
	digest string // "sha256:HEX", or a description of what is there instead
	err    string
}

func parseObservation(line string) observation {
	kind, rest, _ := strings.Cut(line, " ")
	switch kind {
	case "absent":
		return observation{absent: true}
	case "dir":
		return observation{digest: "sha256:" + rest}
	case "other":
		return observation{digest: "(" + rest + ", not a directory)"}
	case "error":
		return observation{err: rest}
	}
	return observation{err: fmt.Sprintf("unexpected output %q", line)}
}

// walk runs walk.sh for paths (one remote command: the node helper's walk
// where n has it) and hashes the listings here. state is walkOK, or why
// read.sh must answer instead.
func walk(ctx context.Context, conn node.Conn, n sdk.Node, paths []string, become bool) ([]observation, walkState, error) {
	res, err := conn.Run(ctx, node.Cmd{Argv: walkArgv(node.HelperPath(n), paths...), Become: become})
	var ee *node.ExitError
	if errors.As(err, &ee) {
		return nil, walkFailed, nil // read.sh says what it was
	}
	if err != nil {
		return nil, walkFailed, fmt.Errorf("reading %d checkout(s) on node %s: %s", len(paths), conn.Name(), runErrText(err))
	}
	obs, state := parseWalk(res.Stdout, len(paths))
	return obs, state, nil
}

// walkState is how walk.sh's answer can be used.
type walkState int

const (
	walkOK       walkState = iota
	walkFailed             // a tree could not be read (read.sh says why)
	walkFallback           // a newline in a name, or other tools: read.sh
)

// parseWalk reads walk.sh's output for n paths.
func parseWalk(out []byte, n int) ([]observation, walkState) {
	var obs []observation
	lines := strings.Split(string(out), "\n")
	if len(lines) == 0 || lines[len(lines)-1] != "" {
		return nil, walkFallback
	}
	lines = lines[:len(lines)-1]
	for i := 0; i < len(lines); i++ {
		if lines[i] != "walk" {
			o := parseObservation(lines[i])
			if o.err != "" {
				return nil, walkFallback
			}
			obs = append(obs, o)
			continue
		}
		var listing []string
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "#"); i++ {
			listing = append(listing, lines[i])
		}
		switch {
		case i == len(lines) && len(obs) == n-1:
			// The last walk, exec'd: the command exited 0.
			obs = append(obs, observation{digest: "sha256:" + listingDigest(listing)})
		case i < len(lines) && lines[i] == "#end 0":
			obs = append(obs, observation{digest: "sha256:" + listingDigest(listing)})
		case i < len(lines) && strings.HasPrefix(lines[i], "#end "):
			return nil, walkFailed
		default:
			return nil, walkFallback // #newline, or cut short
		}
	}
	if len(obs) != n {
		return nil, walkFallback
	}
	return obs, walkOK
}

// tagLine is GNU sha256sum --tag's line for an executable (a leading
// backslash when it escaped the name).
var tagLine = regexp.MustCompile(`^(\\?)SHA256 \((.*)\) = ([0-9a-f]{64})$`)

// listingDigest is tree_digest (scripts/digest.sh) of one walk's lines:
// its sed (folders, symlinks and others as they are; executables as "x
// HASH  NAME", other files "f " and sha256sum's line), then sort in the C
// locale and the sha256 of the sorted lines.
func listingDigest(lines []string) string {
	out := make([]string, len(lines))
	for i, l := range lines {
		switch {
		case len(l) >= 2 && l[1] == ' ' && (l[0] == 'd' || l[0] == 'l' || l[0] == 'o'):
			out[i] = l
		default:
			if m := tagLine.FindStringSubmatch(l); m != nil {
				out[i] = "x " + m[1] + m[3] + "  " + m[2]
			} else {
				out[i] = "f " + l
			}
		}
	}
	sort.Strings(out)
	h := sha256.New()
	for _, l := range out {
		h.Write([]byte(l))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// observe runs read.sh for paths: one remote command.
func observe(ctx context.Context, conn node.Conn, paths []string, become bool) ([]observation, error) {
	res, err := conn.Run(ctx, node.Cmd{Argv: shArgv(readScript, paths...), Become: become})
	if err != nil {
		return nil, fmt.Errorf("reading %d checkout(s) on node %s: %s", len(paths), conn.Name(), runErrText(err))
	}
	lines := strings.Split(strings.TrimSuffix(string(res.Stdout), "\n"), "\n")
	if len(paths) == 0 {
		lines = nil
	}
	if len(lines) != len(paths) {
		return nil, fmt.Errorf("reading checkouts on node %s: got %d lines for %d paths: %q", conn.Name(), len(lines), len(paths), res.Stdout)
	}
	obs := make([]observation, len(lines))
	for i, l := range lines {
		obs[i] = parseObservation(l)
	}
	return obs, nil
}

// runErrText describes a failed Run without the (long) script argv.
func runErrText(err error) string {
	var ee *node.ExitError
	if errors.As(err, &ee) {
		msg := strings.TrimSpace(ee.Stderr)
		if msg == "" {
			msg = "no message"
		}
		return fmt.Sprintf("exit status %d: %s", ee.ExitCode, msg)
	}
	return err.Error()
}

// readPaths observes paths as the connecting user and, only when some tree
// is unreadable (staged through sudo, or changed on the node) and the node
// allows become, once more as root. It returns the round trips made.
func readPaths(ctx context.Context, conn node.Conn, n sdk.Node, paths []string) ([]observation, int, error) {
	// walk.sh as the user; a tree it cannot read, as root where allowed.
	obs, state, err := walk(ctx, conn, n, paths, false)
	trips := 1
	if err == nil && state == walkFailed && n.Become {
		obs, state, err = walk(ctx, conn, n, paths, true)
		trips++
	}
	if err != nil || state == walkOK {
		return obs, trips, err
	}
	// read.sh answers what walk.sh left to it (a newline in a name,
	// busybox tools, an error to explain), as before.
	obs, err = observe(ctx, conn, paths, false)
	trips++
	if err != nil || !n.Become || !slices.ContainsFunc(obs, func(o observation) bool { return o.err != "" }) {
		return obs, trips, err
	}
	obs, err = observe(ctx, conn, paths, true)
	return obs, trips + 1, err
}

// Read implements sdk.Resource: all items in one remote command.
func (c *Checkout) Read(ctx context.Context, n sdk.Node, items []sdk.ReadItem) ([]sdk.ReadResult, int, sdk.Diagnostics) {
	results := make([]sdk.ReadResult, len(items))
	var paths []string
	var idx []int
	for i, it := range items {
		results[i] = sdk.ReadResult{NewState: it.Prior, Private: it.Private}
		if it.Prior.IsNull() || !it.Prior.IsKnown() {
			continue
		}
		p, ok := knownString(it.Prior, attrPath)
		if !ok {
			continue
		}
		paths = append(paths, p)
		idx = append(idx, i)
	}
	if len(paths) == 0 {
		return results, 0, nil
	}
	conn, err := c.pool.Get(ctx, n)
	if err != nil {
		return nil, 0, sdk.Diagnostics{sdk.FromError("Cannot reach node "+n.Name, err)}
	}
	obs, trips, err := readPaths(ctx, conn, n, paths)
	if err != nil {
		return nil, trips, sdk.Diagnostics{sdk.FromError("Cannot read checkouts", err)}
	}
	// A path that is gone while its restore record is still on the node
	// (a destroy interrupted after the tree went, a create killed before
	// it was staged) is not gone: the record names folders sparkform made,
	// and the instance stays in state until a destroy removes them.
	var absent []string
	for j, o := range obs {
		if o.absent {
			absent = append(absent, paths[j])
		}
	}
	var recorded map[string]bool
	if len(absent) > 0 {
		trips++
		if recorded, err = haveRecords(ctx, conn, n, absent); err != nil {
			return nil, trips, sdk.Diagnostics{sdk.FromError("Cannot read the restore records of checkouts", err)}
		}
	}
	for j, o := range obs {
		i := idx[j]
		switch {
		case o.err != "":
			results[i].Diagnostics = sdk.Diagnostics{sdk.Errorf(nil, "Cannot read checkout",
				"%s: cannot read %s on node %s: %s", items[i].Address, paths[j], n.Name, o.err)}
		case o.absent && recorded[paths[j]]:
			results[i].NewState = absentValue(items[i].Prior)
		case o.absent:
			results[i].NewState = cty.NullVal(checkoutSchema.Block.ImpliedType())
		default:
			results[i].NewState = withDigest(items[i].Prior, cty.StringVal(o.digest))
		}
	}
	return results, trips, nil
}

// absentDigest is the tree_digest of a checkout whose tree is gone while
// its restore record (and perhaps the folders it names) is still on the
// node: what apply re-stages and destroy finishes removing.
const absentDigest = "(absent; its restore record is still on the node)"

// unknownDigest is the tree_digest of a checkout whose create failed when
// the node could not be read afterwards: the next refresh reads it.
const unknownDigest = "(unknown: the node could not be read after a failed apply)"

// absentValue is v for a checkout whose tree is gone but whose restore
// record is not.
func absentValue(v cty.Value) cty.Value { return withDigest(v, cty.StringVal(absentDigest)) }

// haveRecordsScript ($3...: record names) prints, per name, "yes" when
// that record exists and "no" otherwise.
const haveRecordsScript = `d=$(sf_rdir "$1" "$2") || exit 1
shift 2
for n in "$@"; do
	if [ -f "$d/$n" ]; then echo yes; else echo no; fi
done
`

// haveRecords reports which of paths have a restore record on the node
// (one remote command).
func haveRecords(ctx context.Context, conn node.Conn, n sdk.Node, paths []string) (map[string]bool, error) {
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = records.Name(p)
	}
	out, err := records.Run(ctx, conn, n.Become, haveRecordsScript, names...)
	if err != nil {
		return nil, err
	}
	lines := strings.Fields(out)
	if len(lines) != len(paths) {
		return nil, fmt.Errorf("restore records on %s: got %d answers for %d paths (%q)", n.Name, len(lines), len(paths), out)
	}
	have := map[string]bool{}
	for i, l := range lines {
		have[paths[i]] = l == "yes"
	}
	return have, nil
}

// Plan implements sdk.Resource.
func (c *Checkout) Plan(ctx context.Context, req sdk.PlanRequest) sdk.PlanResponse {
	resp := sdk.DefaultPlan(checkoutSchema, req)
	if req.Proposed.IsNull() || !req.Proposed.IsKnown() {
		return resp
	}
	creating := req.Prior.IsNull() || len(resp.RequiresReplace) > 0
	if !creating {
		// Every configurable attribute forces replacement, so the only
		// in-place update is drift: what is on the node differs from what
		// was staged. Plan the recorded digest back (or unknown when there
		// is no record) and apply re-stages the tree.
		want := decodePrivate(req.PriorPrivate).TreeDigest
		got := req.Prior.GetAttr(attrDigest)
		switch {
		case want == "":
			resp.Planned = withDigest(req.Prior, cty.UnknownVal(cty.String))
		case !got.IsKnown() || got.IsNull() || got.AsString() != want:
			resp.Planned = withDigest(req.Prior, cty.StringVal(want))
		}
		return resp
	}
	p, ok := knownString(req.Proposed, attrPath)
	if !ok || checkPath(p) != nil {
		return resp // unknown until apply (checked again there) or invalid (Validate says so)
	}
	if !req.Prior.IsNull() && str(req.Prior, attrPath) == p {
		return resp // replacing our own tree in place
	}
	if req.Replaces != cty.NilVal && !req.Replaces.IsNull() && req.Replaces.IsKnown() && str(req.Replaces, attrPath) == p {
		return resp // the create half of a replace: the tree there is ours and goes first
	}
	if req.Offline {
		return resp // -refresh=false: apply checks the path
	}
	conn, err := c.pool.Get(ctx, req.Node)
	if err != nil {
		resp.Diagnostics = append(resp.Diagnostics, sdk.FromError("Cannot reach node "+req.Node.Name, err))
		return resp
	}
	res, err := conn.Run(ctx, node.Cmd{Argv: shArgv(checkScript, p)})
	var ee *node.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode == 3:
		what := strings.TrimSpace(string(res.Stdout))
		hint := "Move it away or remove it yourself, or choose another path."
		if id, ok := importID(req.Proposed); ok && strings.HasPrefix(what, "directory") {
			hint = "If it is this checkout, staged by hand, bring it under sparkform instead:\n  sparkform import " +
				shellQuote(req.Address) + " " + shellQuote(id) + "\nImport reads the tree as it is; the next plan shows any difference from the commit. " +
				"Otherwise move it away or remove it yourself, or choose another path."
		}
		resp.Diagnostics = append(resp.Diagnostics, sdk.Errorf(sdk.AttrPath(attrPath), "Path already exists",
			"%s: %v: %s already exists on node %s (a %s) and sparkform did not create it; refusing to create over it. %s",
			req.Address, ErrPathExists, p, req.Node.Name, what, hint))
	case err != nil:
		resp.Diagnostics = append(resp.Diagnostics, sdk.Errorf(sdk.AttrPath(attrPath), "Cannot check path",
			"%s: checking %s on node %s: %s", req.Address, p, req.Node.Name, runErrText(err)))
	}
	return resp
}

// importID is the id `sparkform import` takes for the checkout v
// describes: PATH,REPO,COMMIT[,SUBDIR].
func importID(v cty.Value) (string, bool) {
	parts := []string{}
	for _, a := range []string{attrPath, attrRepo, attrCommit} {
		s, ok := knownString(v, a)
		if !ok || strings.Contains(s, ",") {
			return "", false
		}
		parts = append(parts, s)
	}
	if sv := v.GetAttr(attrSubdir); !sv.IsKnown() {
		return "", false
	} else if !sv.IsNull() && sv.AsString() != "" {
		if strings.Contains(sv.AsString(), ",") {
			return "", false
		}
		parts = append(parts, sv.AsString())
	}
	return strings.Join(parts, ","), true
}

// shellQuote quotes s for a POSIX shell, for commands a message suggests.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// lineWriter calls fn for every complete line written to it.
type lineWriter struct {
	buf bytes.Buffer
	fn  func(string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	for {
		i := bytes.IndexByte(w.buf.Bytes(), '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(w.buf.Next(i + 1))
		w.fn(strings.TrimSuffix(line, "\n"))
	}
}

// run runs argv as the connecting user; when the script says the parent is
// not writable (exit 77) and the node allows become, it runs it again
// through sudo -n.
func run(ctx context.Context, conn node.Conn, n sdk.Node, argv []string, stdout *lineWriter) error {
	cmd := node.Cmd{Argv: argv}
	if stdout != nil {
		cmd.Stdout = stdout
	}
	_, err := conn.Run(ctx, cmd)
	var ee *node.ExitError
	if errors.As(err, &ee) && ee.ExitCode == exitNotWritable {
		if !n.Become {
			return fmt.Errorf("%w: %s; set become = true on node %s to stage there through sudo -n, or choose a path the user can write",
				ErrNotWritable, strings.TrimSpace(ee.Stderr), n.Name)
		}
		cmd.Become = true
		_, err = conn.Run(ctx, cmd)
	}
	return err
}

// records holds the restore records of checkouts on the nodes, keyed by
// path: the parent folders a create made for it. They are written before
// stage.sh makes the folders, so a create whose reply is lost (a killed
// CLI or plugin, a dropped link) cannot leave them behind: the next
// destroy of that path, or of a replacement at it, reads them.
var records = restore.Store{Kind: TypeCheckout}

// recordScript ($3 record name, $4 PATH, $5 the record's key line) records
// the ancestors of PATH that do not exist yet, then prints the record.
const recordScript = `made=
d=$(dirname "$4")
while [ ! -e "$d" ] && [ ! -L "$d" ]; do
	made="${made}made $d
"
	d=$(dirname "$d")
done
if [ -n "$made" ]; then
	{ sf_rcreate "$1" "$2" "$3" "$5" && sf_rappend "$1" "$2" "$3" "$made"; } || exit 1
fi
sf_rcat "$1" "$2" "$3"
`

// recordMade writes the folders a stage of p is about to make into p's
// restore record and returns every folder the record lists.
func recordMade(ctx context.Context, conn node.Conn, n sdk.Node, p string) ([]string, error) {
	out, err := records.Run(ctx, conn, n.Become, recordScript, records.Name(p), p, "key "+p+"\n")
	if err != nil {
		return nil, err
	}
	_, rec := restore.Split(out)
	return rec["made"], nil
}

// Apply implements sdk.Resource.
func (c *Checkout) Apply(ctx context.Context, req sdk.ApplyRequest, progress func(sdk.Progress)) sdk.ApplyResponse {
	fail := func(summary string, err error) sdk.ApplyResponse {
		return sdk.ApplyResponse{NewState: req.Prior, Private: req.Private,
			Diagnostics: sdk.Diagnostics{sdk.FromError(req.Address+": "+summary, err)}}
	}
	conn, err := c.pool.Get(ctx, req.Node)
	if err != nil {
		return fail("cannot reach node "+req.Node.Name, err)
	}
	if req.Planned.IsNull() {
		return c.destroy(ctx, conn, req)
	}
	repo, commit, subdir, p := str(req.Planned, attrRepo), str(req.Planned, attrCommit), str(req.Planned, attrSubdir), str(req.Planned, attrPath)
	for _, err := range []error{checkRepo(repo), checkCommit(commit), checkPath(p)} {
		if err != nil {
			return fail("invalid configuration", err)
		}
	}
	if subdir != "" {
		if err := checkSubdir(subdir); err != nil {
			return fail("invalid configuration", err)
		}
	}
	mode := "update"
	if req.Prior.IsNull() {
		mode = "create"
	}
	start := time.Now()
	var digest string
	// The folders this apply made, merged with those an earlier apply of
	// the same path made (an update keeps them; a replace at the same
	// path re-makes and re-reports them after the old one's destroy).
	made := decodePrivate(req.Private).Made
	recorded, err := recordMade(ctx, conn, req.Node, p)
	if err != nil {
		return fail("cannot record the folders it makes before staging, so nothing was changed", err)
	}
	made = mergeMade(made, recorded)
	var gitThrottle gitProgressThrottle
	out := &lineWriter{fn: func(line string) {
		switch {
		case strings.HasPrefix(line, "progress: "):
			msg := strings.ReplaceAll(strings.TrimPrefix(line, "progress: "), repo, redact(repo))
			progress(sdk.Progress{Message: msg, Elapsed: time.Since(start)})
		case strings.HasPrefix(line, "gitprogress: "):
			if gp, ok := parseGitProgress(strings.TrimPrefix(line, "gitprogress: ")); ok && gitThrottle.due(gp) {
				gp.Elapsed = time.Since(start)
				progress(gp)
			}
		case strings.HasPrefix(line, "digest: "):
			digest = strings.TrimPrefix(line, "digest: ")
		case strings.HasPrefix(line, "made: "):
			made = mergeMade(made, []string{strings.TrimPrefix(line, "made: ")})
		}
	}}
	err = run(ctx, conn, req.Node, shArgv(stageScript, mode, repo, commit, subdir, p), out)
	if err == nil && digest == "" {
		err = fmt.Errorf("staging script printed no digest")
	}
	if err != nil {
		err = stageError(err, req.Node.Name, repo, commit, subdir, p)
		if errors.Is(err, ErrPathExists) {
			return sdk.ApplyResponse{NewState: req.Prior, Private: req.Private,
				Diagnostics: sdk.Diagnostics{sdk.FromError(req.Address+": refusing to create over existing files", err)}}
		}
		tctx := ctx
		if ctx.Err() != nil {
			// Stopped (Ctrl-C): still report what is really on the node.
			var cancel context.CancelFunc
			tctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
		}
		resp := c.truth(tctx, conn, req, req.Planned, made)
		if resp.NewState.IsNull() && !resp.Diagnostics.HasErrors() {
			// Nothing staged and nothing in state: take away the folders
			// made for it (while empty) and their record now, as no
			// destroy will come for them. Should that fail, the instance
			// stays in state (tree absent) until a destroy removes them.
			if uerr := c.unmake(tctx, conn, req.Node, p, made); uerr != nil {
				resp.NewState, resp.Private = absentValue(req.Planned), private{Made: made}.encode()
				resp.Diagnostics = append(resp.Diagnostics, sdk.Errorf(nil, req.Address+": folders made for the checkout kept",
					"nothing was staged at %s on node %s, but the folders sparkform made for it and their restore record could not be removed: %s. "+
						"The instance stays in state; destroy removes them.", p, req.Node.Name, uerr))
			}
		}
		resp.Diagnostics = append(sdk.Diagnostics{sdk.FromError(req.Address+": staging failed", err)}, resp.Diagnostics...)
		return resp
	}
	d := "sha256:" + digest
	return sdk.ApplyResponse{NewState: withDigest(req.Planned, cty.StringVal(d)), Private: private{TreeDigest: d, Made: made}.encode()}
}

// warningf builds a warning Diagnostic (sdk has only Errorf).
func warningf(summary, detailFormat string, args ...any) sdk.Diagnostic {
	return sdk.Diagnostic{Severity: sdk.Warning, Summary: summary, Detail: fmt.Sprintf(detailFormat, args...)}
}

// redact hides the password of a repo URL (https://user:token@host/...)
// in messages; the node still gets the URL as written.
func redact(repo string) string {
	u, err := url.Parse(repo)
	if err != nil || u.User == nil {
		return repo
	}
	if _, ok := u.User.Password(); !ok {
		return repo
	}
	u.User = url.UserPassword(u.User.Username(), "xxxxx")
	return u.String()
}

// stageError turns a stage.sh failure into an error naming what is wrong
// (with the repo's password, if any, hidden).
func stageError(err error, nodeName, repo, commit, subdir, p string) error {
	shown := redact(repo)
	var ee *node.ExitError
	if !errors.As(err, &ee) {
		return err
	}
	msg := strings.ReplaceAll(strings.TrimSpace(ee.Stderr), repo, shown)
	switch ee.ExitCode {
	case exitRepo:
		return fmt.Errorf("%w: node %s cannot fetch repo %s: %s", ErrRepoUnreachable, nodeName, shown, msg)
	case exitCommit:
		return fmt.Errorf("%w: commit %s is not in repo %s (neither by id nor on any branch or tag); check the id, or push the commit",
			ErrCommitNotFound, commit, shown)
	case exitSubdir:
		return fmt.Errorf("%w: subdir %q is not a directory at commit %s of repo %s", ErrSubdirMissing, subdir, commit, shown)
	case exitExists:
		return fmt.Errorf("%w: %s already exists on node %s and sparkform did not create it; refusing to create over it. "+
			"Move it away or remove it yourself, or choose another path", ErrPathExists, p, nodeName)
	}
	return fmt.Errorf("staging %s at %s into %s on node %s: exit status %d: %s", shown, commit, p, nodeName, ee.ExitCode, msg)
}

// truth reads what is really at the path of v after a failed apply, so
// state stays true. v supplies the config attributes of a present tree;
// made is the folders made for it so far (kept while the tree stays).
func (c *Checkout) truth(ctx context.Context, conn node.Conn, req sdk.ApplyRequest, v cty.Value, made []string) sdk.ApplyResponse {
	resp := sdk.ApplyResponse{NewState: req.Prior, Private: req.Private}
	obs, _, err := readPaths(ctx, conn, req.Node, []string{str(v, attrPath)})
	if err == nil && obs[0].err != "" {
		err = fmt.Errorf("cannot read %s: %s", str(v, attrPath), obs[0].err)
	}
	if err != nil {
		resp.Diagnostics = sdk.Diagnostics{sdk.FromError("state may be stale", err)}
		if req.Prior.IsNull() {
			// A create that failed where the node cannot be read now (the
			// link dropped under it) may have staged the tree: null would
			// make sparkform forget it, and the next create refuse the
			// path as someone else's. Kept (tainted, as a failed create
			// is), the next refresh finds out what is there.
			resp.NewState = withDigest(v, cty.StringVal(unknownDigest))
			resp.Private = private{Made: made}.encode()
		}
		return resp
	}
	switch o := obs[0]; {
	case o.absent:
		resp.NewState, resp.Private = cty.NullVal(checkoutSchema.Block.ImpliedType()), nil
	case req.Prior.IsNull():
		// Created, but the apply failed after the move: no trusted record
		// of the commit's digest, so the next plan re-stages; the folders
		// made for it are still ours to remove.
		resp.NewState = withDigest(v, cty.StringVal(o.digest))
		resp.Private = nil
		if len(made) > 0 {
			resp.Private = private{Made: made}.encode()
		}
	default:
		resp.NewState = withDigest(req.Prior, cty.StringVal(o.digest))
		if len(made) > 0 {
			pv := decodePrivate(req.Private)
			pv.Made = mergeMade(pv.Made, made)
			resp.Private = pv.encode()
		}
	}
	return resp
}

// unmake removes the empty folders made for p and then its restore
// record, when nothing is at p. A made folder that holds other files stays
// (it is no longer only ours), and the record goes all the same.
func (c *Checkout) unmake(ctx context.Context, conn node.Conn, n sdk.Node, p string, made []string) error {
	if _, err := c.remove(ctx, conn, n, p, madeToRemove(p, made)); err != nil {
		return err
	}
	return records.Remove(ctx, conn, n.Become, p)
}

// remove runs remove.sh for p and the made folders: p goes, then each made
// folder while empty. kept names the first made folder that holds other
// files ("" none). An error means the script did not finish (it failed, or
// the link dropped under it): what it names may be partly there still.
func (c *Checkout) remove(ctx context.Context, conn node.Conn, n sdk.Node, p string, made []string) (kept string, err error) {
	out := &lineWriter{fn: func(line string) {
		if d, ok := strings.CutPrefix(line, "kept: "); ok {
			kept = d
		}
	}}
	if err := run(ctx, conn, n, shArgv(removeScript, append([]string{p}, made...)...), out); err != nil {
		return "", err
	}
	return kept, nil
}

// destroy removes the checkout, the folders made for it and its restore
// record, in that order. The instance leaves state only once all of them
// are gone: a destroy cut short (a failed command, a dropped link) keeps
// it, with the tree marked absent when it is, and the next destroy (or a
// refresh, which sees the record) finishes the job.
func (c *Checkout) destroy(ctx context.Context, conn node.Conn, req sdk.ApplyRequest) sdk.ApplyResponse {
	p := str(req.Prior, attrPath)
	if p == "" || checkPath(p) != nil {
		return sdk.ApplyResponse{NewState: req.Planned} // nothing we could have created
	}
	// The record on the node, not only private data, names the folders
	// made: private data of a create whose reply was lost is gone.
	rec, _, err := records.Get(ctx, conn, req.Node.Become, p)
	if err != nil {
		return sdk.ApplyResponse{NewState: req.Prior, Private: req.Private, Diagnostics: sdk.Diagnostics{sdk.Errorf(nil,
			req.Address+": cannot read the restore record", "%s; nothing was removed and the next destroy retries", err)}}
	}
	made := madeToRemove(p, mergeMade(decodePrivate(req.Private).Made, rec["made"]))
	kept, err := c.remove(ctx, conn, req.Node, p, made)
	if err != nil {
		return c.destroyCut(ctx, conn, req, fmt.Sprintf("removing %s and the folders sparkform made for it on node %s: %s", p, req.Node.Name, runErrText(err)))
	}
	sdk.Step(req.Address, "delete-tree-removed") // a kill here leaves only the record
	// Gone and its folders handled: only now may the record go.
	if err := records.Remove(ctx, conn, req.Node.Become, p); err != nil {
		return c.destroyCut(ctx, conn, req, fmt.Sprintf("removed %s on node %s, but not its restore record: %s", p, req.Node.Name, err))
	}
	resp := sdk.ApplyResponse{NewState: req.Planned}
	if kept != "" {
		var above []string
		for _, d := range made {
			if strings.HasPrefix(kept, d+"/") {
				above = append(above, d)
			}
		}
		detail := fmt.Sprintf("removed %s on node %s, but kept %s: sparkform created that folder for the checkout, "+
			"but it now holds files sparkform did not put there, so it is left as it is", p, req.Node.Name, kept)
		if len(above) > 0 {
			detail += fmt.Sprintf(" (and with it %s, which sparkform also created)", strings.Join(above, ", "))
		}
		resp.Diagnostics = sdk.Diagnostics{warningf(req.Address+": kept "+kept+", which holds other files",
			"%s. Remove it yourself once its contents are not needed.", detail)}
	}
	return resp
}

// destroyCut is the answer of a destroy that did not finish: an error, and
// the instance kept in state as the node now shows it (its tree absent
// when it is gone) with its private data, so the next destroy finishes.
func (c *Checkout) destroyCut(ctx context.Context, conn node.Conn, req sdk.ApplyRequest, why string) sdk.ApplyResponse {
	tctx := ctx
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		tctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
	}
	st := req.Prior
	if obs, _, err := readPaths(tctx, conn, req.Node, []string{str(req.Prior, attrPath)}); err == nil {
		switch o := obs[0]; {
		case o.absent:
			st = absentValue(req.Prior)
		case o.err == "":
			st = withDigest(req.Prior, cty.StringVal(o.digest))
		}
	}
	return sdk.ApplyResponse{NewState: st, Private: req.Private, Diagnostics: sdk.Diagnostics{sdk.Errorf(nil,
		req.Address+": destroy did not finish", "%s. The instance stays in state with its restore record on the node; "+
			"run destroy again to finish removing what sparkform made.", why)}}
}

// Import implements sdk.Resource. The id is "PATH,REPO,COMMIT[,SUBDIR]".
// The tree at PATH is adopted as is; the commit is staged in a temporary
// tree only to learn its digest, so a tree that differs from the commit
// shows as drift in the next plan.
func (c *Checkout) Import(ctx context.Context, req sdk.ImportRequest) sdk.ImportResponse {
	bad := func(err error) sdk.ImportResponse {
		return sdk.ImportResponse{Diagnostics: sdk.Diagnostics{sdk.Errorf(nil, "Cannot import gitkit_checkout", "%s", err)}}
	}
	f := strings.Split(req.ID, ",")
	if len(f) != 3 && len(f) != 4 {
		return bad(fmt.Errorf("import id %q must be PATH,REPO,COMMIT or PATH,REPO,COMMIT,SUBDIR", req.ID))
	}
	p, repo, commit := f[0], f[1], f[2]
	subdir, subdirVal := "", cty.NullVal(cty.String)
	checks := []error{checkPath(p), checkRepo(repo), checkCommit(commit)}
	if len(f) == 4 {
		subdir, subdirVal = f[3], cty.StringVal(f[3])
		checks = append(checks, checkSubdir(subdir))
	}
	for _, err := range checks {
		if err != nil {
			return bad(err)
		}
	}
	conn, err := c.pool.Get(ctx, req.Node)
	if err != nil {
		return bad(err)
	}
	obs, _, err := readPaths(ctx, conn, req.Node, []string{p})
	if err != nil {
		return bad(err)
	}
	switch o := obs[0]; {
	case o.err != "":
		return bad(fmt.Errorf("cannot read %s on node %s: %s", p, req.Node.Name, o.err))
	case o.absent:
		return bad(fmt.Errorf("nothing at %s on node %s to import", p, req.Node.Name))
	}
	var digest string
	out := &lineWriter{fn: func(line string) {
		if strings.HasPrefix(line, "digest: ") {
			digest = strings.TrimPrefix(line, "digest: ")
		}
	}}
	if err := run(ctx, conn, req.Node, shArgv(stageScript, "probe", repo, commit, subdir, p), out); err != nil {
		return bad(stageError(err, req.Node.Name, repo, commit, subdir, p))
	}
	state := cty.ObjectVal(map[string]cty.Value{
		attrRepo: cty.StringVal(repo), attrCommit: cty.StringVal(commit), attrSubdir: subdirVal,
		attrPath: cty.StringVal(p), attrDigest: cty.StringVal(obs[0].digest),
	})
	return sdk.ImportResponse{State: state, Private: private{TreeDigest: "sha256:" + digest}.encode()}
}
