package recipeimport

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
	"gopkg.in/yaml.v3"
)

// The other launcher (scitrera/sparkrun) writes recipes as YAML: format v2
// (recipe_version "2", the default: runtime, min_nodes/max_nodes, defaults
// substituted into a command template) and the eugr v1 format
// (recipe_version "1": name, cluster_only/solo_only, build_args, mods; Ray
// in cluster mode). Both read into the same Recipe the TOML format does.

// yamlKeys are the top-level keys of both formats, each with what the
// import does with it. sparkrun sweeps a key it does not know into
// runtime_config; the import refuses it instead, naming it, because a key
// nobody maps is a setting silently lost.
var yamlKeys = map[string]bool{
	"sparkrun_version": true, "recipe_version": true, "name": true, "description": true,
	"model": true, "model_revision": true, "runtime": true, "runtime_version": true,
	"mode": true, "min_nodes": true, "max_nodes": true, "cluster_only": true, "solo_only": true,
	"container": true, "defaults": true, "env": true, "command": true, "runtime_config": true,
	"metadata": true, "benchmark": true, "pre_exec": true, "post_exec": true,
	"post_commands": true, "stop_after_post": true, "builder": true, "builder_config": true,
	// eugr v1 (and v2 recipes for eugr-built images): top level or under runtime_config.
	"build_args": true, "mods": true,
}

// yamlRecipe is a YAML recipe as written (before the defaults are
// substituted into the command).
type yamlRecipe struct {
	version      string
	name         string
	description  string
	model        string
	modelRev     string
	runtime      string
	mode         string
	minNodes     *int
	maxNodes     *int
	clusterOnly  bool
	soloOnly     bool
	container    string
	defaults     map[string]any
	defaultsLine map[string]int
	// defaultsOrder and defaultsNote: the defaults in recipe order, and
	// the comments above and beside each.
	defaultsOrder []string
	defaultsNote  map[string][]string
	env           map[string]string
	envLines      map[string]int
	envAbove      map[string][]string
	envBeside     map[string]string
	// envVars are the env keys whose value names shell variables ($NAME,
	// ${NAME}), each written as var.env_name.
	envVars   map[string]bool
	command   string
	builder   string
	buildArgs []string
	mods      []string
	preExec   bool
	header    []string
	keyLines  map[string]int
	ignored   []Warning
}

func importYAML(src []byte, filename string, set map[string]string) (*Recipe, *meta, *yamlRecipe, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %v", filename, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil, nil, fmt.Errorf("%s: a recipe is a YAML mapping of keys (model, container, command, ...)", filename)
	}
	top := doc.Content[0]
	y := &yamlRecipe{keyLines: map[string]int{}, defaultsLine: map[string]int{}, envLines: map[string]int{}, envAbove: map[string][]string{}, envBeside: map[string]string{}, version: "2", mode: "auto"}
	y.header = commentLines(doc.HeadComment)
	if len(top.Content) > 0 {
		y.header = append(y.header, commentLines(top.Content[0].HeadComment)...)
	}
	at := func(n *yaml.Node) string { return fmt.Sprintf("%s:%d", filename, n.Line) }
	var unknown []string
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		if !yamlKeys[k.Value] {
			unknown = append(unknown, fmt.Sprintf("%s: unknown key %q: neither sparkrun recipe format (v1 or v2) has it, so it cannot be mapped; remove it or map it by hand (docs/recipes.md lists every key)", at(k), k.Value))
			continue
		}
		y.keyLines[k.Value] = k.Line
		if err := y.key(k, v, at, &unknown); err != nil {
			return nil, nil, nil, err
		}
	}
	if len(unknown) > 0 {
		return nil, nil, nil, fmt.Errorf("%s", strings.Join(unknown, "\n"))
	}
	if len(set) > 0 {
		if y.defaults == nil {
			y.defaults = map[string]any{}
		}
		keys := make([]string, 0, len(set))
		for k := range set {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			if !identRE.MatchString(k) {
				return nil, nil, nil, fmt.Errorf("-set %s=...: a defaults key is a name (letters, digits, _)", k)
			}
			y.defaults[k] = set[k]
			parts = append(parts, k+"="+set[k])
		}
		y.header = append(y.header, "", "Imported with -set "+strings.Join(parts, " -set ")+" (sparkrun's -o KEY=VALUE).")
	}
	r, err := y.recipe(filename)
	if err != nil {
		return nil, nil, nil, err
	}
	// The model checks name the args by their line: here, the command's.
	y.keyLines["args"] = y.keyLines["command"]
	m := &meta{header: y.header, envAbove: y.envAbove, envBeside: y.envBeside, envLines: y.envLines, keyLines: y.keyLines,
		stepLines: map[string][]int{}, stepAbove: map[string][][]string{}}
	return r, m, y, nil
}

func commentLines(c string) []string {
	var out []string
	for _, l := range strings.Split(c, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		out = append(out, strings.TrimSpace(strings.TrimPrefix(l, "#")))
	}
	return out
}

func (y *yamlRecipe) key(k, v *yaml.Node, at func(*yaml.Node) string, unknown *[]string) error {
	scalar := func() (string, error) {
		if v.Kind != yaml.ScalarNode {
			return "", fmt.Errorf("%s: %s must be a single value", at(k), k.Value)
		}
		if v.Tag == "!!null" {
			return "", nil
		}
		return v.Value, nil
	}
	num := func() (*int, error) {
		s, err := scalar()
		if err != nil || s == "" {
			return nil, err
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %s = %q: give a whole number of nodes, at least 1", at(k), k.Value, s)
		}
		return &n, nil
	}
	boolean := func() (bool, error) {
		var b bool
		if v.Tag == "!!null" {
			return false, nil
		}
		if err := v.Decode(&b); err != nil {
			return false, fmt.Errorf("%s: %s must be true or false", at(k), k.Value)
		}
		return b, nil
	}
	strs := func() ([]string, error) {
		var ss []string
		if v.Tag == "!!null" {
			return nil, nil
		}
		if err := v.Decode(&ss); err != nil {
			return nil, fmt.Errorf("%s: %s must be a list of strings", at(k), k.Value)
		}
		return ss, nil
	}
	var err error
	switch k.Value {
	case "sparkrun_version", "recipe_version":
		s, e := scalar()
		if e != nil {
			return e
		}
		if s != "1" && s != "2" {
			return fmt.Errorf("%s: %s = %q: the import reads recipe versions \"1\" (eugr) and \"2\"", at(k), k.Value, s)
		}
		y.version = s
	case "name":
		y.name, err = scalar()
	case "description":
		y.description, err = scalar()
	case "model":
		y.model, err = scalar()
	case "model_revision":
		y.modelRev, err = scalar()
	case "runtime":
		y.runtime, err = scalar()
	case "runtime_version":
		_, err = scalar() // the engine's version, for the launcher's own bookkeeping
	case "mode":
		y.mode, err = scalar()
	case "min_nodes":
		y.minNodes, err = num()
	case "max_nodes":
		y.maxNodes, err = num()
	case "cluster_only":
		y.clusterOnly, err = boolean()
	case "solo_only":
		y.soloOnly, err = boolean()
	case "container":
		y.container, err = scalar()
	case "command":
		y.command, err = scalar()
	case "build_args":
		var ba []string
		ba, err = strs()
		y.buildArgs = append(y.buildArgs, ba...)
	case "mods":
		var ms []string
		ms, err = strs()
		y.mods = append(y.mods, ms...)
	case "defaults":
		if v.Tag == "!!null" {
			return nil
		}
		if v.Kind != yaml.MappingNode {
			return fmt.Errorf("%s: defaults must be a mapping of names to values", at(k))
		}
		y.defaults = map[string]any{}
		for i := 0; i+1 < len(v.Content); i += 2 {
			dk, dv := v.Content[i], v.Content[i+1]
			if dv.Kind != yaml.ScalarNode {
				return fmt.Errorf("%s: defaults.%s must be a single value (it is substituted into the command)", at(dk), dk.Value)
			}
			y.defaults[dk.Value] = dv.Value
			y.defaultsLine[dk.Value] = dk.Line
			y.defaultsOrder = append(y.defaultsOrder, dk.Value)
			if c := append(commentLines(dk.HeadComment), commentLines(dv.LineComment)...); len(c) > 0 {
				if y.defaultsNote == nil {
					y.defaultsNote = map[string][]string{}
				}
				y.defaultsNote[dk.Value] = c
			}
		}
	case "env":
		if v.Tag == "!!null" {
			// "env:" with only comments under it, as eugr's template has.
			return nil
		}
		if v.Kind != yaml.MappingNode {
			return fmt.Errorf("%s: env must be a mapping of names to strings", at(k))
		}
		y.env = map[string]string{}
		for i := 0; i+1 < len(v.Content); i += 2 {
			ek, ev := v.Content[i], v.Content[i+1]
			if ev.Kind != yaml.ScalarNode {
				return fmt.Errorf("%s: env.%s must be a string", at(ek), ek.Value)
			}
			y.env[ek.Value] = ev.Value
			y.envLines[ek.Value] = ek.Line
			y.envAbove[ek.Value] = commentLines(ek.HeadComment)
			if c := commentLines(ev.LineComment); len(c) > 0 {
				y.envBeside[ek.Value] = c[0]
			}
			// sparkrun expands $NAME and ${NAME} from the shell: here each
			// is a sensitive variable (a token, most often), never text in
			// the config.
			if shellRefRE.MatchString(ev.Value) {
				if y.envVars == nil {
					y.envVars = map[string]bool{}
				}
				y.envVars[ek.Value] = true
			}
		}
	case "runtime_config":
		if v.Tag == "!!null" {
			return nil
		}
		if v.Kind != yaml.MappingNode {
			return fmt.Errorf("%s: runtime_config must be a mapping", at(k))
		}
		for i := 0; i+1 < len(v.Content); i += 2 {
			rk := v.Content[i]
			switch rk.Value {
			case "mods", "build_args":
				if err := y.key(rk, v.Content[i+1], at, unknown); err != nil {
					return err
				}
			default:
				*unknown = append(*unknown, fmt.Sprintf("%s: unknown key \"runtime_config.%s\": the import maps runtime_config's mods and build_args only, so it cannot be mapped; remove it or map it by hand", at(rk), rk.Value))
			}
		}
	case "metadata":
		if v.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(v.Content); i += 2 {
				if v.Content[i].Value == "description" && y.description == "" {
					y.description = v.Content[i+1].Value
				}
			}
		}
	case "pre_exec":
		// Commands run in the container at each start, before serving.
		y.preExec = v.Tag != "!!null" && len(v.Content) > 0
		if y.preExec {
			return fmt.Errorf("%s: pre_exec runs commands in the container at every start; the import does not map it: put them in a mod (mods/NAME/run.sh in the recipe's repository, listed under mods), which is built into the image", at(k))
		}
	case "post_exec", "post_commands", "benchmark":
		if v.Tag != "!!null" && len(v.Content) > 0 {
			y.ignored = append(y.ignored, Warning{Line: k.Line, Message: fmt.Sprintf("%s is not imported: it runs after the server is healthy (checks, benchmarks) and does not change what is served; run it yourself after apply", k.Value)})
		}
	case "stop_after_post":
	case "builder", "builder_config":
		if k.Value == "builder" {
			y.builder = v.Value
		}
		if k.Value == "builder" && v.Value != "" {
			y.ignored = append(y.ignored, Warning{Line: k.Line, Message: fmt.Sprintf("builder = %q: sparkform does not build images; the nodes need the image %s before apply (build it there or push it to a registry)", v.Value, "named by container")})
		}
	}
	return err
}

var (
	placeholderRE = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\}`)
	identRE       = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// shellRefRE is a shell variable in an env value: $NAME or ${NAME}.
	shellRefRE = regexp.MustCompile(`\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))`)
)

// recipe maps the YAML recipe to the TOML Recipe: the node count from the
// parallel layout (a DGX Spark has one GPU), the backend from the runtime,
// the command rendered with the defaults and split into an argv.
func (y *yamlRecipe) recipe(filename string) (*Recipe, error) {
	at := func(key string) string {
		if l := y.keyLines[key]; l > 0 {
			return fmt.Sprintf("%s:%d", filename, l)
		}
		return filename
	}
	r := &Recipe{Env: y.env, Model: y.model, ModelRevision: y.modelRev, DockerImage: y.container}
	r.Name = y.name
	if y.container == "" {
		return nil, fmt.Errorf("%s: the recipe has no container: sparkform needs the image to run (sparkrun would guess one from the runtime; give it)", filename)
	}
	if y.command == "" {
		return nil, fmt.Errorf("%s: the recipe has no command: sparkrun would build one from its runtime plugin; write the serve command in the recipe (command: |) and import again", filename)
	}
	runtime := y.runtime
	cmd := strings.TrimSpace(y.command)
	if runtime == "" {
		switch {
		case regexp.MustCompile(`^(exec\s+)?vllm\s+serve\b`).MatchString(cmd):
			runtime = "vllm"
		case regexp.MustCompile(`^(exec\s+)?(sglang\s+serve|python3?\s+-m\s+sglang\.launch_server)\b`).MatchString(cmd):
			runtime = "sglang"
		case regexp.MustCompile(`^(exec\s+)?llama-server\b`).MatchString(cmd):
			runtime = "llama-cpp"
		default:
			runtime = "vllm"
		}
	}
	if y.version == "1" && runtime == "vllm" {
		runtime = "eugr-vllm"
	}
	if runtime == "vllm" && (len(y.mods) > 0 || len(y.buildArgs) > 0) {
		runtime = "eugr-vllm"
	}
	rayAsked := strings.EqualFold(fmt.Sprint(y.defaults["distributed_executor_backend"]), "ray") || regexp.MustCompile(`--distributed-executor-backend[ =]+ray\b`).MatchString(cmd)
	if runtime == "vllm" {
		runtime = "vllm-distributed"
		if rayAsked {
			runtime = "vllm-ray"
		}
	}
	vllm := false
	switch runtime {
	case "vllm-distributed", "vllm-ray", "eugr-vllm":
		vllm = true
	case "sglang", "llama-cpp":
	default:
		return nil, fmt.Errorf("%s: runtime = %q: the import maps vllm (vllm-distributed, vllm-ray, eugr-vllm), sglang and llama-cpp", at("runtime"), runtime)
	}

	// The layout: a DGX Spark has one GPU, so tensor x pipeline parallel
	// is the node count, within min_nodes..max_nodes.
	intDefault := func(key string) (int, error) {
		v, ok := y.defaults[key]
		if !ok {
			return 1, nil
		}
		n, err := strconv.Atoi(fmt.Sprint(v))
		if err != nil || n < 1 {
			return 0, fmt.Errorf("%s:%d: defaults.%s = %v: give a whole number, at least 1", filename, y.defaultsLine[key], key, v)
		}
		return n, nil
	}
	tp, err := intDefault("tensor_parallel")
	if err != nil {
		return nil, err
	}
	pp, err := intDefault("pipeline_parallel")
	if err != nil {
		return nil, err
	}
	minNodes, maxNodes := 1, 0
	if y.minNodes != nil {
		minNodes = *y.minNodes
	}
	if y.maxNodes != nil {
		maxNodes = *y.maxNodes
	}
	if y.mode == "solo" || y.soloOnly {
		maxNodes = 1
	}
	if y.clusterOnly || y.mode == "cluster" {
		minNodes = max(minNodes, 2)
	}
	if y.mode != "auto" && y.mode != "solo" && y.mode != "cluster" {
		return nil, fmt.Errorf("%s: mode = %q: sparkrun knows auto, solo and cluster", at("mode"), y.mode)
	}
	nodes := max(tp*pp, minNodes)
	if maxNodes > 0 && nodes > maxNodes {
		return nil, fmt.Errorf("%s: tensor_parallel %d x pipeline_parallel %d needs %d DGX Spark nodes (one GPU each), but the recipe allows at most %d (max_nodes, solo_only or mode: solo)", at("max_nodes"), tp, pp, tp*pp, maxNodes)
	}
	r.RequiredNodes = &nodes
	r.TensorParallelSize = &tp
	r.PipelineParallelSize = &pp
	one := 1
	r.GPUsPerNode = &one
	switch {
	case runtime == "vllm-ray", runtime == "eugr-vllm" && nodes > 1:
		// eugr's launcher runs Ray in cluster mode, none solo.
		r.DistributedBackend = "ray"
	case vllm:
		r.DistributedBackend = "mp"
	}
	if runtime == "vllm-ray" && nodes == 1 {
		return nil, fmt.Errorf("%s: the recipe runs vLLM on Ray (%s), but on one node (tensor_parallel x pipeline_parallel = 1): a Ray cluster needs 2 or more nodes. Set defaults.tensor_parallel to the node count, or drop Ray for one node", at("runtime"), rayWhy(y))
	}
	if !vllm && nodes > 1 {
		return nil, fmt.Errorf("%s: %s on %d nodes: the import maps multi-node serving for vLLM only; run it on one node (tensor_parallel 1)", filename, runtime, nodes)
	}

	// The command, rendered as sparkrun does ({key} from the defaults and
	// the model; {{ and }} are literal braces), split into an argv.
	vals := map[string]string{"model": y.model}
	for k, v := range y.defaults {
		vals[k] = fmt.Sprint(v)
	}
	const lb, rb = "\x00LB\x00", "\x00RB\x00"
	rendered := strings.NewReplacer("{{", lb, "}}", rb).Replace(cmd)
	for range 10 { // nested references, as sparkrun iterates
		var missing []string
		next := placeholderRE.ReplaceAllStringFunc(rendered, func(m string) string {
			k := m[1 : len(m)-1]
			if v, ok := vals[k]; ok && (k != "model" || v != "") {
				return v
			}
			missing = append(missing, k)
			return m
		})
		if len(missing) > 0 {
			return nil, fmt.Errorf("%s: the command uses {%s}, which neither defaults nor model gives; add it under defaults", at("command"), missing[0])
		}
		if next == rendered {
			break
		}
		rendered = next
	}
	rendered = strings.NewReplacer(lb, "{", rb, "}").Replace(rendered)
	argv, err := shellSplit(rendered)
	if err != nil {
		return nil, fmt.Errorf("%s: the command %v; sparkform runs the serve command as one program with its arguments", at("command"), err)
	}
	if len(argv) > 0 && argv[0] == "exec" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("%s: the command is empty", at("command"))
	}
	if vllm {
		// The recipe module appends the layout flags and the serving port
		// for every rank (layout_flags): the recipe's own copies go, so
		// that no flag is given twice with two values.
		argv = dropFlags(argv, layoutFlags)
	}
	if runtime == "llama-cpp" {
		for i, a := range argv {
			if (a == "-hf" || a == "--hf-repo") && y.model != "" {
				y.ignored = append(y.ignored, Warning{Line: y.keyLines["command"], Message: fmt.Sprintf("llama-server %s downloads the model at every start into its own cache; sparkform copies the snapshot to the nodes and binds it at %s: replace %s %s with -m %s/FILE.gguf (sparkrun rewrites it so)", a, modelTarget, a, argv[min(i+1, len(argv)-1)], modelTarget)})
			}
		}
	}
	r.Entrypoint = argv[:1]
	r.Args = argv[1:]
	if len(argv) >= 2 && (argv[0] == "vllm" || argv[0] == "sglang") && argv[1] == "serve" {
		r.Entrypoint, r.Args = argv[:2], argv[2:]
	}
	return r, nil
}

func rayWhy(y *yamlRecipe) string {
	if y.runtime == "vllm-ray" {
		return "runtime: vllm-ray"
	}
	if strings.EqualFold(fmt.Sprint(y.defaults["distributed_executor_backend"]), "ray") {
		return "defaults.distributed_executor_backend: ray"
	}
	return "--distributed-executor-backend ray in the command"
}

// layoutFlags are the vLLM flags the recipe module sets per rank, with
// whether each takes a value.
var layoutFlags = map[string]bool{
	"-tp": true, "--tensor-parallel-size": true, "-pp": true, "--pipeline-parallel-size": true,
	"--distributed-executor-backend": true, "--nnodes": true, "--node-rank": true,
	"--master-addr": true, "--port": true,
}

func dropFlags(argv []string, flags map[string]bool) []string {
	var out []string
	for i := 0; i < len(argv); i++ {
		name, _, hasEq := strings.Cut(argv[i], "=")
		if takes, ok := flags[strings.ReplaceAll(name, "_", "-")]; ok {
			if takes && !hasEq {
				i++
			}
			continue
		}
		out = append(out, argv[i])
	}
	return out
}

// shellSplit splits a command as sh would (quotes, backslashes, line
// continuations) and refuses what only a shell could run: operators,
// substitutions and variables.
func shellSplit(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && s[i+1] == '\n':
			i++
		case c == '\\' && i+1 < len(s) && (s[i+1] == ' ' || s[i+1] == '\t'):
			// "\ " at a line end: the trailing-space slip sparkrun repairs.
			j := i + 1
			for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
				j++
			}
			if j < len(s) && s[j] == '\n' {
				i = j
				continue
			}
			cur.WriteByte(s[i+1])
			inWord = true
			i++
		case c == '\\' && i+1 < len(s):
			cur.WriteByte(s[i+1])
			inWord = true
			i++
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("has an unclosed single quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '$' || s[i] == '`' {
					return nil, fmt.Errorf("expands %q inside double quotes, which needs a shell", s[i:min(len(s), i+12)])
				}
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					i++
					if s[i] == '\n' {
						continue
					}
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("has an unclosed double quote")
			}
			inWord = true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		case strings.IndexByte(";&|<>()`$", c) >= 0:
			return nil, fmt.Errorf("uses the shell (%q): split it into a mod for the setup and one serve command", string(c))
		case c == '#' && !inWord:
			return nil, fmt.Errorf("has a comment, which needs a shell")
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}

// isYAML reports whether a recipe file is the other launcher's YAML.
func isYAML(filename string) bool {
	switch strings.ToLower(path.Ext(filename)) {
	case ".yaml", ".yml":
		return true
	}
	return false
}

// envVarName is the root variable an env value taken from the shell
// becomes.
func envVarName(shellName string) string { return "env_" + strings.ToLower(shellName) }

// shellNames are the shell variables an env value names, in order.
func shellNames(v string) []string {
	var out []string
	for _, m := range shellRefRE.FindAllStringSubmatch(v, -1) {
		out = append(out, m[1]+m[2])
	}
	return out
}

// envExpr is an env value naming shell variables as HCL: var.env_name
// for a value that is one variable, else a template with the rest escaped.
func envExpr(v string) string {
	if m := shellRefRE.FindStringSubmatchIndex(v); m != nil && m[0] == 0 && m[1] == len(v) {
		return "var." + envVarName(shellNames(v)[0])
	}
	var b strings.Builder
	b.WriteByte('"')
	last := 0
	lit := func(s string) {
		q := string(hclwrite.TokensForValue(cty.StringVal(s)).Bytes())
		b.WriteString(q[1 : len(q)-1])
	}
	for _, m := range shellRefRE.FindAllStringSubmatchIndex(v, -1) {
		lit(v[last:m[0]])
		var name string
		if m[2] >= 0 {
			name = v[m[2]:m[3]]
		} else {
			name = v[m[4]:m[5]]
		}
		b.WriteString("${var." + envVarName(name) + "}")
		last = m[1]
	}
	lit(v[last:])
	b.WriteByte('"')
	return b.String()
}

// writeDefaults lists a sparkrun recipe's defaults, with their comments,
// above the args they were rendered into: where each value came from.
func (g *gen) writeDefaults(body *hclwrite.Body) {
	y := g.yaml
	if y == nil || len(y.defaultsOrder) == 0 {
		return
	}
	body.AppendUnstructuredTokens(comment("The recipe's defaults, as rendered into the command (re-import with -set KEY=VALUE to change one):"))
	for _, k := range y.defaultsOrder {
		line := fmt.Sprintf("  %s: %s", k, fmt.Sprint(y.defaults[k]))
		if set, ok := g.opts.Set[k]; ok {
			line = fmt.Sprintf("  %s: %s (-set)", k, set)
		}
		notes := y.defaultsNote[k]
		if len(notes) == 1 {
			line += "  # " + notes[0]
		} else {
			for _, n := range notes {
				body.AppendUnstructuredTokens(comment("  # " + n))
			}
		}
		body.AppendUnstructuredTokens(comment(line))
	}
}

// eugrMods reports whether sparkrun takes this recipe's mods from eugr's
// repository (github.com/eugr/spark-vllm-docker) rather than the recipe's
// own: builder eugr, a v1 vLLM recipe, or spark-arena's eugr nightly
// images (as sparkrun's maintainers describe it).
func (y *yamlRecipe) eugrMods() bool {
	return y.builder == "eugr" || y.version == "1" ||
		strings.HasPrefix(y.container, "ghcr.io/spark-arena/dgx-vllm-eugr-nightly")
}
