// Package recipeimport turns a launcher recipe (the TOML format of the
// seed, *.recipe.toml, or the other launcher sparkrun's YAML, formats v1
// and v2: yaml.go) into a sparkform root module that calls the
// spark-recipe module (modules/spark-recipe).
//
// Contract:
//   - Every key of the format is mapped (docs/recipes.md is the table); a
//     key it does not know is an error naming it and its line, never
//     dropped.
//   - before_serve/after_stop steps are recognised by what they do, not by
//     their text: the launcher's display-RAM unlock/restore scripts (or a
//     modprobe of a module with parameters), a manifest generator over a
//     hub snapshot (python with HUB/MANIFEST and repo/revision/target
//     triples), a pinned git clone of a repo folder into a kit folder, and
//     mkdir -p of a mounted folder. A step it cannot map becomes a
//     node_command resource with a comment, and a Warning with its line.
//   - The model is never dropped: the model key (with model_revision and
//     sparkrun's "ORG/NAME:QUANT" selector), a drafter named by hub id in
//     the speculative-decoding flags of the args, and the manifest
//     generator step become the module's model and drafter; where two name
//     one of them differently it is an error. With no generator naming a
//     shared hub folder, the nodes get copies (hubstage_snapshot, from
//     var.model_source) in var.hub_dir, mounted at /hub with HF_HUB_CACHE.
//   - The output is hclwrite-formatted (fmt -check passes) and loads and
//     validates; nodes come from variables (-var / a var file), never from
//     the recipe.
//   - Comments above and beside env keys in the recipe are kept beside the
//     same keys in the output; the recipe's header comments head main.sf.hcl.
//   - A script the recipe runs (a { script = PATH } step, sparkrun's mods)
//     is read from the recipe's repository and inlined into a node_command
//     with a check (mods.go); one that is not there is an error naming it.
//   - An unpinned image (no tag, or :latest) is a Warning that drift cannot
//     be seen, or is pinned to the registry digest Options.RepoDigests
//     reports for a node.
//   - A layout no node set can serve is an error: tensor x pipeline
//     parallel not equal to the GPUs, Ray on one node.
package recipeimport

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	toml "github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
	"github.com/zclconf/go-cty/cty"
)

// Recipe is the launcher's recipe format.
type Recipe struct {
	Engine               string            `toml:"engine"`
	DockerImage          string            `toml:"docker_image"`
	Model                string            `toml:"model"`
	ModelRevision        string            `toml:"model_revision"`
	Name                 string            `toml:"name"`
	RequiredNodes        *int              `toml:"required_nodes"`
	Cluster              string            `toml:"cluster"`
	TensorParallelSize   *int              `toml:"tensor_parallel_size"`
	PipelineParallelSize *int              `toml:"pipeline_parallel_size"`
	GPUsPerNode          *int              `toml:"gpus_per_node"`
	DistributedBackend   string            `toml:"distributed_backend"`
	ShmSize              string            `toml:"shm_size"`
	Devices              []string          `toml:"devices"`
	MemoryLimit          string            `toml:"memory_limit"`
	Cpus                 *float64          `toml:"cpus"`
	ExtraMountsManifest  string            `toml:"extra_mounts_manifest"`
	Entrypoint           []string          `toml:"entrypoint"`
	Args                 []string          `toml:"args"`
	BeforeServe          []any             `toml:"before_serve"`
	AfterStop            []any             `toml:"after_stop"`
	ExtraMounts          []Mount           `toml:"extra_mounts"`
	Env                  map[string]string `toml:"env"`
}

// Mount is one [[extra_mounts]] table.
type Mount struct {
	Host      string `toml:"host"`
	Container string `toml:"container"`
	ReadOnly  bool   `toml:"read_only"`
}

// Warning is a step that could not be mapped, with its line.
type Warning struct {
	Line    int
	Message string
}

func (w Warning) String() string { return fmt.Sprintf("line %d: %s", w.Line, w.Message) }

// Result is the root module: file name -> content.
type Result struct {
	Files    map[string][]byte
	Warnings []Warning
}

// ModuleSource is where the generated root finds the recipe module.
const ModuleSource = "./modules/spark-recipe"

// Options are the import's settings beyond the recipe.
type Options struct {
	// RepoDir is the recipe's repository, where its mods and step
	// scripts are found; "" means the nearest folder above the recipe
	// holding .git, else the recipe's folder.
	RepoDir string
	// RepoDigests, when set, lists the registry digests
	// ("REPO@sha256:...") a node holds for an image; an unpinned image
	// (no tag, or :latest) is then pinned to the one of its repository.
	// It returns ErrNoImage (wrapped) when the node does not have it.
	RepoDigests func(image string) ([]string, error)
	// PinFrom names the node RepoDigests asks, for messages.
	PinFrom string
	// Set overrides a sparkrun recipe's defaults before its command is
	// rendered, as sparkrun's `run -o KEY=VALUE` does (tensor_parallel
	// changes the node count too).
	Set map[string]string
}

// ImportWith reads src (named filename, for messages and, unless
// opts.RepoDir is set, to find the recipe's repository), a recipe in the
// seed's TOML or, when filename ends in .yaml or .yml, sparkrun's YAML
// (v1 or v2), and writes the root. It writes no file itself: on an error
// the caller has nothing to write.
func ImportWith(src []byte, filename string, opts Options) (*Result, error) {
	if isYAML(filename) {
		r, m, y, err := importYAML(src, filename, opts.Set)
		if err != nil {
			return nil, err
		}
		g := &gen{r: r, meta: m, file: filename, opts: opts, root: repoRoot(filename, opts), yaml: y}
		g.warnings = append(g.warnings, y.ignored...)
		return g.run()
	}
	if len(opts.Set) > 0 {
		return nil, fmt.Errorf("%s: -set overrides a sparkrun recipe's defaults; this TOML recipe has none: edit its args instead", filename)
	}
	var r Recipe
	dec := toml.NewDecoder(bytes.NewReader(src)).DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		var sme *toml.StrictMissingError
		if errors.As(err, &sme) {
			var msgs []string
			for _, e := range sme.Errors {
				row, _ := e.Position()
				msgs = append(msgs, fmt.Sprintf("%s:%d: unknown key %q: the recipe format has no such key, so it cannot be mapped; remove it or map it by hand (docs/recipes.md lists every key)", filename, row, strings.Join(e.Key(), ".")))
			}
			return nil, errors.New(strings.Join(msgs, "\n"))
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, fmt.Errorf("%s:%d:%d: %s", filename, row, col, de.Error())
		}
		return nil, fmt.Errorf("%s: %w", filename, err)
	}
	meta, err := scan(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filename, err)
	}
	g := &gen{r: &r, meta: meta, file: filename, opts: opts, root: repoRoot(filename, opts)}
	return g.run()
}

// meta is what the value decoder does not give: comments and lines.
type meta struct {
	header      []string            // the comment lines before the first key
	envAbove    map[string][]string // comment lines above an env key
	envBeside   map[string]string   // the comment after an env key, same line
	stepLines   map[string][]int    // before_serve/after_stop: line of each step
	stepAbove   map[string][][]string
	trailingEnv []string
	envLines    map[string]int
	keyLines    map[string]int // top-level keys: their line
}

func scan(src []byte) (*meta, error) {
	m := &meta{keyLines: map[string]int{}, envLines: map[string]int{}, envAbove: map[string][]string{}, envBeside: map[string]string{}, stepLines: map[string][]int{}, stepAbove: map[string][][]string{}}
	p := unstable.Parser{KeepComments: true}
	p.Reset(src)
	table := ""
	seenKey := false
	var pending []string
	lineOf := func(r unstable.Range) int { return p.Shape(r).Start.Line }
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Comment:
			text := strings.TrimSpace(strings.TrimPrefix(string(e.Data), "#"))
			if !seenKey && table == "" {
				m.header = append(m.header, text)
				continue
			}
			pending = append(pending, text)
		case unstable.Table, unstable.ArrayTable:
			table = keyString(e.Key())
			seenKey = true
			pending = nil
		case unstable.KeyValue:
			key := keyString(e.Key())
			seenKey = true
			if table == "" {
				if it := e.Key(); it.Next() {
					m.keyLines[key] = lineOf(it.Node().Raw)
				}
			}
			if table == "env" {
				if it := e.Key(); it.Next() {
					m.envLines[key] = lineOf(it.Node().Raw)
				}
				m.envAbove[key] = pending
				if c := e.Next(); c != nil && c.Kind == unstable.Comment {
					m.envBeside[key] = strings.TrimSpace(strings.TrimPrefix(string(c.Data), "#"))
				}
			}
			if table == "" && (key == "before_serve" || key == "after_stop") {
				kl := 0
				if it := e.Key(); it.Next() {
					kl = lineOf(it.Node().Raw)
				}
				for it := e.Value().Children(); it.Next(); {
					c := it.Node()
					if c.Kind == unstable.Comment {
						continue
					}
					line := kl
					if c.Raw.Length > 0 {
						line = lineOf(c.Raw)
					} else if cc := c.Child(); cc != nil && cc.Raw.Length > 0 {
						line = lineOf(cc.Raw)
					}
					m.stepLines[key] = append(m.stepLines[key], line)
				}
			}
			pending = nil
		}
	}
	if err := p.Error(); err != nil {
		return nil, err
	}
	if table == "env" {
		m.trailingEnv = pending
	}
	return m, nil
}

func keyString(it unstable.Iterator) string {
	var parts []string
	for it.Next() {
		parts = append(parts, string(it.Node().Data))
	}
	return strings.Join(parts, ".")
}

type gen struct {
	r    *Recipe
	meta *meta
	file string
	opts Options
	// root is the recipe's repository (mods, step scripts).
	root string
	// yaml is the sparkrun recipe this one was read from (nil: TOML).
	yaml *yamlRecipe
	// image is what the containers run: the recipe's image, pinned to a
	// digest, or the image its mods build.
	image     string
	imageNote []string
	modImage  *modImage

	warnings []Warning
	// what the steps turned out to be
	display            *displayUnlock
	kit                *kit
	manifests          *manifestGen
	mkdirs             map[string]bool
	commands           []command
	restoreRecognised  bool
	displayFromScripts bool
	// repos are the model (first) and drafter (second) the recipe names,
	// by its model key, its args or its manifest generator step; hub is
	// the generator's hub folder ("" when no step names one: the nodes
	// get copies, in var.hub_dir).
	repos []hubRepo
	hub   string
}

type displayUnlock struct {
	module string
	params map[string]string
}

type kit struct {
	repo, commit, subdir, dest string
}

type manifestGen struct {
	hub      string
	manifest string
	repos    []hubRepo
}

type hubRepo struct {
	role                     string // "model" or "drafter": the module input
	repoID, revision, target string
	include                  []string
	// from says where the import found it (for messages and comments).
	from string
}

type command struct {
	name, phase, script string
	line                int
	onFailure           string
	// inlined is the repository path of a script step inlined here; check
	// and marker are its check script and the file it records its hash in.
	inlined, check, marker string
}

// The launcher's built-in scripts, by what they do.
var builtinScripts = map[string]string{
	"unlock_display_ram":  "unlock",
	"restore_display_ram": "restore",
}

// The display-RAM unlock the launcher's unlock_display_ram performs.
var launcherUnlock = displayUnlock{module: "nvidia_drm", params: map[string]string{"modeset": "1", "fbdev": "0"}}

func (g *gen) run() (*Result, error) {
	g.mkdirs = map[string]bool{}
	for _, phase := range []string{"before_serve", "after_stop"} {
		steps := g.r.BeforeServe
		if phase == "after_stop" {
			steps = g.r.AfterStop
		}
		for i, s := range steps {
			line := 0
			if i < len(g.meta.stepLines[phase]) {
				line = g.meta.stepLines[phase][i]
			}
			if err := g.step(phase, i, line, s); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", g.file, line, err)
			}
		}
	}
	if err := g.check(); err != nil {
		return nil, err
	}
	if err := g.models(); err != nil {
		return nil, err
	}
	if err := g.images(); err != nil {
		return nil, err
	}
	main, err := g.writeMain()
	if err != nil {
		return nil, err
	}
	return &Result{Files: map[string][]byte{"main.sf.hcl": main, "variables.sf.hcl": g.writeVariables()}, Warnings: g.warnings}, nil
}

func (g *gen) check() error {
	var missing []string
	if g.r.DockerImage == "" {
		missing = append(missing, "docker_image")
	}
	if g.r.RequiredNodes == nil {
		missing = append(missing, "required_nodes")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: the recipe has no %s, which a sparkform recipe needs", g.file, strings.Join(missing, " or "))
	}
	return g.checkLayout()
}

func (g *gen) step(phase string, i, line int, s any) error {
	switch s := s.(type) {
	case map[string]any:
		name, _ := s["script"].(string)
		onFailure, _ := s["on_failure"].(string)
		for k := range s {
			if k != "script" && k != "on_failure" {
				return fmt.Errorf("unknown key %q in a %s step: a step table has script and on_failure", k, phase)
			}
		}
		switch onFailure {
		case "", "warn", "fail", "ignore":
		default:
			return fmt.Errorf("on_failure = %q: the launcher knows warn, fail and ignore", onFailure)
		}
		switch builtinScripts[name] {
		case "unlock":
			if phase == "before_serve" {
				d := launcherUnlock
				g.display = &d
				g.displayFromScripts = true
				return nil
			}
		case "restore":
			if phase == "after_stop" {
				g.restoreRecognised = true
				return nil
			}
		}
		if _, ok := builtinScripts[name]; ok {
			return fmt.Errorf("%q is the launcher's built-in script for %s, not %s: move the step there", name, map[string]string{"unlock": "before_serve", "restore": "after_stop"}[builtinScripts[name]], phase)
		}
		return g.scriptStep(phase, i, line, name, onFailure)
	case string:
		if g.recognise(s) {
			return nil
		}
		g.unmapped(phase, i, line, s, "", "this shell step is not one sparkform recognises")
		return nil
	}
	return fmt.Errorf("a %s step must be a string or a { script = ... } table, not %T", phase, s)
}

func (g *gen) unmapped(phase string, i, line int, script, onFailure, why string) {
	name := fmt.Sprintf("%s_%d", phase, i+1)
	g.commands = append(g.commands, command{name: name, phase: phase, script: script, line: line, onFailure: onFailure})
	g.warnings = append(g.warnings, Warning{Line: line, Message: fmt.Sprintf("%s step %d: %s; it becomes node_command.%s (a command run on every node), check it", phase, i+1, why, name)})
}

var (
	modprobeRE = regexp.MustCompile(`^(?:sudo\s+)?modprobe\s+(-r\s+\S+\s*(?:&&|;)\s*(?:sudo\s+)?modprobe\s+)?([A-Za-z0-9_-]+)((?:\s+[A-Za-z0-9_]+=\S+)+)\s*$`)
	mkdirRE    = regexp.MustCompile(`^mkdir\s+-p\s+(\S+)\s*$`)
	cloneRE    = regexp.MustCompile(`git clone(?:\s+-\S+)*\s+(\S+)\s+(\S+)`)
	checkoutRE = regexp.MustCompile(`git checkout(?:\s+-\S+)*\s+([0-9a-f]{40})\b`)
	mvRE       = regexp.MustCompile(`\bmv\s+(\S+)\s+(\S+)`)
	pyRE       = regexp.MustCompile(`(?s)^python3?\s+-\s+(.*?)<<\s*'?(\w+)'?\n(.*)\n(\w+)\s*$`)
	hubRE      = regexp.MustCompile(`(?m)^HUB\s*=\s*'([^']+)'`)
	manifRE    = regexp.MustCompile(`(?m)^MANIFEST\s*=\s*'([^']+)'`)
	catRefRE   = regexp.MustCompile(`^\$\(cat\s+(\S+)/refs/([^)\s]+)\)$`)
	commitRE   = regexp.MustCompile(`^[0-9a-f]{40}$`)
)

// recognise maps a shell step by what it does.
func (g *gen) recognise(s string) bool {
	s = strings.TrimSpace(s)
	if m := mkdirRE.FindStringSubmatch(s); m != nil {
		g.mkdirs[path.Clean(m[1])] = true
		return true
	}
	if m := modprobeRE.FindStringSubmatch(s); m != nil {
		params := map[string]string{}
		for _, kv := range strings.Fields(m[3]) {
			k, v, _ := strings.Cut(kv, "=")
			params[k] = v
		}
		g.display = &displayUnlock{module: m[2], params: params}
		return true
	}
	if k := parseClone(s); k != nil {
		g.kit = k
		return true
	}
	if mg := parseManifestGen(s); mg != nil {
		g.manifests = mg
		return true
	}
	return false
}

// parseClone recognises a pinned clone of one folder into a kit folder:
// git clone URL TMP, git checkout COMMIT in it, mv TMP/SUBDIR DEST.
func parseClone(s string) *kit {
	c := cloneRE.FindStringSubmatch(s)
	co := checkoutRE.FindStringSubmatch(s)
	if c == nil || co == nil {
		return nil
	}
	word := func(w string) string { return path.Clean(strings.TrimRight(w, ";&|)")) }
	tmp := word(c[2])
	for _, mv := range mvRE.FindAllStringSubmatch(s, -1) {
		src := word(mv[1])
		if src == tmp || strings.HasPrefix(src, tmp+"/") {
			return &kit{repo: strings.TrimRight(c[1], ";&|)"), commit: co[1], subdir: strings.TrimPrefix(strings.TrimPrefix(src, tmp), "/"), dest: word(mv[2])}
		}
	}
	return nil
}

// parseManifestGen recognises the manifest generator: python reading a
// heredoc that walks HUB/REPO/snapshots/REV and writes MANIFEST, called
// with REPO REV TARGET triples.
func parseManifestGen(s string) *manifestGen {
	m := pyRE.FindStringSubmatch(s)
	if m == nil || m[2] != m[4] {
		return nil
	}
	body := m[3]
	hub := hubRE.FindStringSubmatch(body)
	man := manifRE.FindStringSubmatch(body)
	if hub == nil || !strings.Contains(body, "snapshots") {
		return nil
	}
	words := shellWords(m[1])
	if len(words) == 0 || len(words)%3 != 0 {
		return nil
	}
	mg := &manifestGen{hub: hub[1]}
	if man != nil {
		mg.manifest = man[1]
	}
	for i := 0; i < len(words); i += 3 {
		repo, rev, target := words[i], words[i+1], words[i+2]
		if !strings.HasPrefix(repo, "models--") {
			return nil
		}
		id := strings.Replace(strings.TrimPrefix(repo, "models--"), "--", "/", 1)
		switch {
		case commitRE.MatchString(rev):
		case catRefRE.MatchString(rev):
			rm := catRefRE.FindStringSubmatch(rev)
			if path.Base(rm[1]) != repo {
				return nil
			}
			rev = rm[2]
		default:
			return nil
		}
		mg.repos = append(mg.repos, hubRepo{repoID: id, revision: rev, target: target})
	}
	if len(mg.repos) > 2 {
		return nil // the module binds a model and one drafter
	}
	return mg
}

// shellWords splits on blanks, keeping a $( ... ) substitution one word.
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	depth := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '$' && i+1 < len(s) && s[i+1] == '(':
			depth++
			cur.WriteString("$(")
			i++
		case c == ')' && depth > 0:
			depth--
			cur.WriteByte(c)
		case (c == ' ' || c == '\t') && depth == 0:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteByte(c)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// homeOf splits an absolute path under /home/USER (or /root) into the
// home folder and the rest.
func homeOf(p string) (home, rest string, ok bool) {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "home":
		return "/home/" + parts[1], strings.Join(parts[2:], "/"), true
	case len(parts) >= 2 && parts[0] == "root":
		return "/root", strings.Join(parts[1:], "/"), true
	}
	return "", "", false
}

func (g *gen) home() string {
	if g.kit != nil {
		if h, _, ok := homeOf(g.kit.dest); ok {
			return h
		}
	}
	for _, m := range g.r.ExtraMounts {
		if h, _, ok := homeOf(m.Host); ok {
			return h
		}
	}
	return ""
}

func (g *gen) writeVariables() []byte {
	f := hclwrite.NewEmptyFile()
	body := f.Body()
	v := body.AppendNewBlock("variable", []string{"nodes"})
	home := g.home()
	if home == "" {
		home = "/home/kilork"
	}
	v.Body().SetAttributeValue("description", cty.StringVal(fmt.Sprintf("The %d node(s) the recipe runs on, keyed by name: SSH host and port, rank (0 .. %d, one each), the home folder holding the kit and caches, the serving port, and the address the other nodes reach its sshd at over the cluster link (cluster_address; null: host), which model copies from rank 0 use. Give them with -var or a var file.", *g.r.RequiredNodes, *g.r.RequiredNodes-1)))
	v.Body().SetAttributeRaw("type", tokens(fmt.Sprintf(`map(object({
  host       = string
  rank       = number
  port       = optional(number, 22)
  home       = optional(string, %q)
  serve_port = optional(number, %d)
  cluster_address = optional(string)
}))`, home, g.servePort())))
	body.AppendNewline()
	if len(g.repos) > 0 {
		g.writeModelVariables(body)
	}
	g.writeEnvVariables(body)
	for _, name := range []string{"user", "identity_file", "known_hosts"} {
		b := body.AppendNewBlock("variable", []string{name})
		desc := map[string]string{
			"user":          "The SSH user on every node (sudo -n for the kernel module and the Docker socket); null: the current user.",
			"identity_file": "Private key for SSH; null uses the ssh-agent and ~/.ssh/id_ed25519, id_rsa.",
			"known_hosts":   "known_hosts file the node keys are checked against; null means ~/.ssh/known_hosts.",
		}[name]
		b.Body().SetAttributeValue("description", cty.StringVal(desc))
		b.Body().SetAttributeRaw("default", tokens("null"))
		body.AppendNewline()
	}
	return hclwrite.Format(f.Bytes())
}

func tokens(src string) hclwrite.Tokens {
	f, diags := hclwrite.ParseConfig([]byte("x = "+src+"\n"), "", hcl.InitialPos)
	if diags.HasErrors() {
		panic(fmt.Sprintf("recipeimport: generated expression does not parse: %s: %s", diags.Error(), src))
	}
	return f.Body().GetAttribute("x").Expr().BuildTokens(nil)
}

func str(s string) hclwrite.Tokens { return hclwrite.TokensForValue(cty.StringVal(s)) }

func strList(ss []string) hclwrite.Tokens {
	vals := make([]cty.Value, len(ss))
	for i, s := range ss {
		vals[i] = cty.StringVal(s)
	}
	if len(vals) == 0 {
		return tokens("[]")
	}
	// One word per line, as the recipe writes long argument lists.
	var b strings.Builder
	b.WriteString("[\n")
	for _, v := range vals {
		b.Write(hclwrite.TokensForValue(v).Bytes())
		b.WriteString(",\n")
	}
	b.WriteString("]")
	return tokens(b.String())
}

func comment(text string) hclwrite.Tokens {
	if text == "" {
		return hclwrite.Tokens{{Type: hclsyntax.TokenComment, Bytes: []byte("#\n")}}
	}
	return hclwrite.Tokens{{Type: hclsyntax.TokenComment, Bytes: []byte("# " + text + "\n")}}
}

func (g *gen) writeMain() ([]byte, error) {
	r := g.r
	f := hclwrite.NewEmptyFile()
	body := f.Body()
	title := r.Name
	if title == "" {
		title = "a launcher recipe"
	}
	body.AppendUnstructuredTokens(comment(fmt.Sprintf("%s, imported by `sparkform recipe import` from %s.", title, path.Base(g.file))))
	if len(g.meta.header) > 0 {
		body.AppendUnstructuredTokens(comment(""))
		for _, h := range g.meta.header {
			body.AppendUnstructuredTokens(comment(h))
		}
	}
	if g.yaml != nil {
		body.AppendUnstructuredTokens(comment(""))
		if g.yaml.description != "" {
			body.AppendUnstructuredTokens(comment(g.yaml.description))
		}
		body.AppendUnstructuredTokens(comment(g.yamlSummary()))
	}
	body.AppendNewline()

	// locals: the recipe's entrypoint, args and env, verbatim.
	g.writeDefaults(body)
	locals := body.AppendNewBlock("locals", nil)
	lb := locals.Body()
	if len(r.Entrypoint) > 0 {
		lb.SetAttributeRaw("entrypoint", strList(r.Entrypoint))
	}
	lb.SetAttributeRaw("args", strList(r.Args))
	lb.SetAttributeRaw("env", g.envTokens())
	body.AppendNewline()

	n := body.AppendNewBlock("node", []string{"spark"})
	nb := n.Body()
	nb.SetAttributeRaw("for_each", tokens("var.nodes"))
	nb.SetAttributeRaw("host", tokens("each.value.host"))
	nb.SetAttributeRaw("port", tokens("each.value.port"))
	nb.SetAttributeRaw("user", tokens("var.user"))
	nb.SetAttributeRaw("identity_file", tokens("var.identity_file"))
	nb.SetAttributeRaw("known_hosts", tokens("var.known_hosts"))
	nb.SetAttributeRaw("become", tokens("true"))
	body.AppendNewline()

	var deps []string
	if g.modImage != nil {
		g.writeModImage(body)
		deps = append(deps, "node_command.mods")
		body.AppendNewline()
	}
	for _, c := range g.commands {
		g.writeCommand(body, c)
		deps = append(deps, "node_command."+c.name)
		body.AppendNewline()
	}

	m := body.AppendNewBlock("module", []string{"recipe"})
	mb := m.Body()
	mb.SetAttributeValue("source", cty.StringVal(ModuleSource))
	mb.AppendNewline()
	tp, pp, gpus := g.layout()
	backend := r.DistributedBackend
	if backend == "" {
		backend = "mp"
	}
	if r.Cluster != "" {
		mb.AppendUnstructuredTokens(comment(fmt.Sprintf("cluster = %q: the hosts in var.nodes are the operator's choice of its free ranks.", r.Cluster)))
	}
	mb.SetAttributeRaw("recipe", tokens(fmt.Sprintf(`{
  required_nodes         = %d
  tensor_parallel_size   = %d
  pipeline_parallel_size = %d
  gpus_per_node          = %d
  distributed_backend    = %q
  nodes = { for k, n in var.nodes : k => {
    node       = node.spark[k]
    rank       = n.rank
    home       = n.home
    serve_port = n.serve_port
    cluster_address = n.cluster_address
  } }
}`, *r.RequiredNodes, tp, pp, gpus, backend)))
	if g.display != nil {
		mb.AppendNewline()
		if g.displayFromScripts {
			mb.AppendUnstructuredTokens(comment("unlock_display_ram / restore_display_ram: temporary, destroy restores the module as it was."))
		}
		var keys []string
		for k := range g.display.params {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var ps []string
		for _, k := range keys {
			ps = append(ps, fmt.Sprintf("%s = %s", k, hclwrite.TokensForValue(cty.StringVal(g.display.params[k])).Bytes()))
		}
		mb.SetAttributeRaw("display_unlock", tokens(fmt.Sprintf("{ module = %q, params = { %s } }", g.display.module, strings.Join(ps, ", "))))
	}
	kitDest := ""
	if g.kit != nil {
		kitDest = g.kit.dest
		_, rest, ok := homeOf(g.kit.dest)
		if !ok {
			return nil, fmt.Errorf("%s: the kit is cloned to %s, which is not under a home folder (/home/USER or /root); the module stages kits under each node's home", g.file, g.kit.dest)
		}
		mb.AppendNewline()
		sub := "null"
		if g.kit.subdir != "" {
			sub = fmt.Sprintf("%q", g.kit.subdir)
		}
		mb.SetAttributeRaw("kit", tokens(fmt.Sprintf("{\n  repo   = %q\n  commit = %q\n  subdir = %s\n  dir    = %q\n}", g.kit.repo, g.kit.commit, sub, rest)))
	}
	if len(g.repos) > 0 {
		mb.AppendNewline()
		if g.hub != "" {
			mb.SetAttributeValue("hub_dir", cty.StringVal(g.hub))
		} else {
			mb.AppendUnstructuredTokens(comment(fmt.Sprintf("Copied into var.hub_dir on every node, mounted at %s (HF_HUB_CACHE) and bound file by file at the target.", hubMount)))
			mb.SetAttributeRaw("hub_dir", tokens("var.hub_dir"))
		}
		for _, hr := range g.repos {
			fields := fmt.Sprintf("repo_id = %q, revision = %q, target = %q", hr.repoID, hr.revision, hr.target)
			if len(hr.include) > 0 {
				fields += fmt.Sprintf(", include = [%q]", hr.include[0])
			}
			if hr.from != "the manifest generator step" {
				mb.AppendUnstructuredTokens(comment(fmt.Sprintf("%s: from %s.", hr.role, hr.from)))
			}
			mb.SetAttributeRaw(hr.role, tokens("{ "+fields+" }"))
		}
		if g.hub != "" {
			mb.AppendUnstructuredTokens(comment("null: hub_dir already holds the snapshots (a NAS); set var.model_source to copy them to each node."))
		} else {
			mb.AppendUnstructuredTokens(comment("Rank 0 from the hub (or var.model_source), the other ranks from rank 0 over the cluster link."))
		}
		mb.SetAttributeRaw("model_source", tokens("var.model_source"))
	}
	if r.ExtraMountsManifest != "" {
		if g.manifests == nil {
			return nil, fmt.Errorf("%s: extra_mounts_manifest = %q but no step generates the manifest; sparkform cannot know what goes in it", g.file, r.ExtraMountsManifest)
		}
		if g.manifests.manifest != "" && g.manifests.manifest != r.ExtraMountsManifest {
			return nil, fmt.Errorf("%s: extra_mounts_manifest = %q, but the generator writes %q", g.file, r.ExtraMountsManifest, g.manifests.manifest)
		}
		mb.AppendUnstructuredTokens(comment("extra_mounts_manifest: the files are bound one by one (bind_files); the model's manifest is also written there."))
		mb.SetAttributeValue("manifest_path", cty.StringVal(r.ExtraMountsManifest))
	}
	mb.AppendNewline()
	name := r.Name
	mb.SetAttributeValue("name", cty.StringVal(containerName(name, path.Base(g.file))))
	for _, n := range g.imageNote {
		mb.AppendUnstructuredTokens(comment(n))
	}
	if g.modImage != nil {
		mb.AppendUnstructuredTokens(comment(fmt.Sprintf("%s with the recipe's mods (node_command.mods).", g.modImage.base)))
	}
	mb.SetAttributeValue("image", cty.StringVal(g.image))
	if len(r.Entrypoint) > 0 {
		mb.SetAttributeRaw("entrypoint", tokens("local.entrypoint"))
	}
	mb.SetAttributeRaw("args", tokens("local.args"))
	if g.yaml != nil && r.DistributedBackend == "" {
		mb.AppendUnstructuredTokens(comment("Not vLLM: the recipe's command has its own flags; the module adds none."))
		mb.SetAttributeRaw("layout_flags", tokens("false"))
	}
	mb.SetAttributeRaw("env", tokens("local.env"))
	if r.MemoryLimit != "" {
		mb.AppendUnstructuredTokens(comment("memory_limit, no swap."))
		mb.SetAttributeValue("memory", cty.StringVal(r.MemoryLimit))
	}
	if r.Cpus != nil {
		mb.SetAttributeValue("cpus", cty.NumberFloatVal(*r.Cpus))
	}
	if r.ShmSize != "" {
		mb.SetAttributeValue("shm_size", cty.StringVal(r.ShmSize))
	}
	if len(r.Devices) > 0 {
		mb.SetAttributeRaw("devices", strList(r.Devices))
	}
	if len(r.ExtraMounts) > 0 || g.copiesHub() {
		var b strings.Builder
		b.WriteString("[\n")
		if g.copiesHub() {
			fmt.Fprintf(&b, "{ source = var.hub_dir, target = %q, read_only = true },\n", hubMount)
		}
		for _, em := range r.ExtraMounts {
			src := path.Clean(em.Host)
			create := g.mkdirs[src]
			delete(g.mkdirs, src)
			switch {
			case kitDest != "" && (src == kitDest || strings.HasPrefix(src, kitDest+"/")):
				src = "{kit}" + strings.TrimPrefix(src, kitDest)
			default:
				if h := g.home(); h != "" && strings.HasPrefix(src, h+"/") {
					src = "{home}" + strings.TrimPrefix(src, h)
				}
			}
			fmt.Fprintf(&b, "{ source = %s, target = %s", hclwrite.TokensForValue(cty.StringVal(src)).Bytes(), hclwrite.TokensForValue(cty.StringVal(em.Container)).Bytes())
			if em.ReadOnly {
				b.WriteString(", read_only = true")
			}
			if create {
				b.WriteString(", create_host_path = true")
			}
			b.WriteString(" },\n")
		}
		b.WriteString("]")
		mb.SetAttributeRaw("mounts", tokens(b.String()))
	}
	for dir := range g.mkdirs {
		g.warnings = append(g.warnings, Warning{Message: fmt.Sprintf("mkdir -p %s makes a folder no extra_mounts entry mounts; nothing else uses it, so it was left out", dir)})
	}
	if len(deps) > 0 {
		mb.AppendNewline()
		mb.AppendUnstructuredTokens(comment("The steps kept as commands run before the container starts and are undone after it stops."))
		mb.SetAttributeRaw("depends_on", tokens("["+strings.Join(deps, ", ")+"]"))
	}
	body.AppendNewline()
	o := body.AppendNewBlock("output", []string{"containers"})
	o.Body().SetAttributeRaw("value", tokens("module.recipe.containers"))
	if len(g.repos) > 0 {
		body.AppendNewline()
		o := body.AppendNewBlock("output", []string{"model_commit"})
		o.Body().SetAttributeRaw("value", tokens("module.recipe.model_commit"))
	}
	return hclwrite.Format(f.Bytes()), nil
}

func containerName(name, file string) string {
	base := strings.TrimSuffix(file, path.Ext(file))
	base = strings.TrimSuffix(base, ".recipe")
	s := strings.ToLower(base)
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}
	out := strings.Trim(b.String(), "-._")
	if out == "" {
		return "recipe"
	}
	return out
}

func (g *gen) writeCommand(body *hclwrite.Body, c command) {
	if c.inlined != "" {
		g.writeInlined(body, c)
		return
	}
	if c.line > 0 {
		body.AppendUnstructuredTokens(comment(fmt.Sprintf("%s step from line %d, kept as is: sparkform does not know what it does, so it cannot see drift or", c.phase, c.line)))
	} else {
		body.AppendUnstructuredTokens(comment(fmt.Sprintf("%s step, kept as is: sparkform does not know what it does, so it cannot see drift or", c.phase)))
	}
	body.AppendUnstructuredTokens(comment("undo it by itself. Give it a check (exit 0 = done) and, for a before_serve step, a destroy."))
	b := body.AppendNewBlock("resource", []string{"node_command", c.name})
	bb := b.Body()
	bb.SetAttributeRaw("for_each", tokens("var.nodes"))
	bb.SetAttributeRaw("node", tokens("node.spark[each.key]"))
	script := c.script
	if _, ok := builtinScripts[script]; ok || isWord(script) {
		script = script + " # a launcher script: install it on the nodes, or replace this with what it does"
	}
	if c.phase == "after_stop" {
		bb.SetAttributeRaw("create", tokens(`["true"]`))
		bb.SetAttributeRaw("destroy_script", heredoc(script))
	} else {
		bb.SetAttributeRaw("create_script", heredoc(script))
	}
	if c.onFailure != "" {
		bb.AppendUnstructuredTokens(comment(fmt.Sprintf("on_failure = %q in the recipe: a failing command stops the apply (or destroy), and a later run retries it.", c.onFailure)))
	}
}

func isWord(s string) bool {
	return s != "" && !strings.ContainsAny(s, " \t\n;|&<>$`'\"")
}

// heredoc writes a script as a heredoc (templates escaped), or a quoted
// string when it has no newline.
func heredoc(s string) hclwrite.Tokens {
	if !strings.Contains(s, "\n") {
		return str(s)
	}
	esc := strings.ReplaceAll(strings.ReplaceAll(s, "${", "$${"), "%{", "%%{")
	marker := "EOT"
	for strings.Contains(esc, marker) {
		marker += "X"
	}
	if !strings.HasSuffix(esc, "\n") {
		esc += "\n"
	}
	return hclwrite.Tokens{
		{Type: hclsyntax.TokenOHeredoc, Bytes: []byte("<<" + marker + "\n")},
		{Type: hclsyntax.TokenStringLit, Bytes: []byte(esc)},
		{Type: hclsyntax.TokenCHeredoc, Bytes: []byte(marker)},
	}
}

func (g *gen) envTokens() hclwrite.Tokens {
	keys := make([]string, 0, len(g.r.Env))
	for k := range g.r.Env {
		keys = append(keys, k)
	}
	// The recipe's order, which the comments follow.
	order := map[string]int{}
	i := 0
	for _, k := range g.envOrder() {
		order[k] = i
		i++
	}
	sort.SliceStable(keys, func(a, b int) bool { return order[keys[a]] < order[keys[b]] })
	var b strings.Builder
	b.WriteString("{\n")
	for _, k := range keys {
		for _, c := range g.meta.envAbove[k] {
			b.WriteString("# " + c + "\n")
		}
		key := k
		if !hclsyntax.ValidIdentifier(k) {
			key = string(hclwrite.TokensForValue(cty.StringVal(k)).Bytes())
		}
		if g.yaml != nil && g.yaml.envVars[k] {
			b.WriteString(key + " = " + envExpr(g.r.Env[k]))
		} else {
			b.WriteString(key + " = " + string(hclwrite.TokensForValue(cty.StringVal(g.r.Env[k])).Bytes()))
		}
		if c, ok := g.meta.envBeside[k]; ok {
			b.WriteString(" # " + c)
		}
		b.WriteString("\n")
	}
	for _, c := range g.meta.trailingEnv {
		b.WriteString("# " + c + "\n")
	}
	if g.copiesHub() {
		for _, kv := range [][2]string{{"HF_HUB_CACHE", hubMount}, {"HF_HUB_OFFLINE", "1"}} {
			if _, ok := g.r.Env[kv[0]]; !ok {
				fmt.Fprintf(&b, "%s = %q # added by recipe import: the copied hub folder, mounted at %s\n", kv[0], kv[1], hubMount)
			}
		}
	}
	b.WriteString("}")
	return tokens(b.String())
}

// envOrder is the env keys in recipe order (comments attach in order).
func (g *gen) envOrder() []string {
	out := make([]string, 0, len(g.meta.envLines))
	for k := range g.meta.envLines {
		out = append(out, k)
	}
	sort.Slice(out, func(a, b int) bool { return g.meta.envLines[out[a]] < g.meta.envLines[out[b]] })
	return out
}
