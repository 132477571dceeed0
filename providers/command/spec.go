package command

import (
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk"
)

// The steps a node_command has; each is an argv attribute NAME or a
// script attribute NAME_script.
const (
	stepCreate  = "create"
	stepUpdate  = "update"
	stepDestroy = "destroy"
	stepCheck   = "check"
)

var steps = []string{stepCreate, stepUpdate, stepDestroy, stepCheck}

// DefaultTimeout bounds each command when timeout is not set.
const DefaultTimeout = 10 * time.Minute

// defaultInterpreter runs scripts: the script is its last argument.
var defaultInterpreter = []string{"/bin/sh", "-c"}

// runAffecting are the attributes that change what create does: a change
// to one of them runs update, or replaces the object when there is none.
var runAffecting = []string{"create", "create_script", "interpreter", "env", "dir", "become"}

var stepDescriptions = map[string]string{
	stepCreate:  "Run on create. Exactly one of create and create_script is required.",
	stepUpdate:  "Run in place when what create does changes (create, create_script, interpreter, env, dir, become); without it such a change replaces the object.",
	stepDestroy: "Run on destroy (the one stored at the last apply). Without it destroy only forgets the object.",
	stepCheck:   "Run at every refresh: exit 0 = present and current, any other exit = gone (planned for create again); 126 and 127 (cannot run) are errors. Without it drift cannot be seen, and plan says so.",
}

var schema = func() *sdk.ResourceSchema {
	attrs := map[string]*sdk.Attribute{
		"interpreter": {Type: cty.List(cty.String), Optional: true, Computed: true,
			Description: "The argv a script runs with, the script being its last argument. Default [\"/bin/sh\", \"-c\"]."},
		"env": {Type: cty.Map(cty.String), Optional: true,
			Description: "Extra environment for every command (names: letters, digits and _, not starting with a digit)."},
		"dir": {Type: cty.String, Optional: true,
			Description: "Absolute working folder of every command; default the login user's home."},
		"become": {Type: cty.Bool, Optional: true,
			Description: "Run every command through `sudo -n` (needs passwordless sudo on the node)."},
		"timeout": {Type: cty.String, Optional: true, Computed: true,
			Description: "How long one command may run, as a Go duration (\"90s\", \"10m\"). Default 10m."},
		"triggers_replace": {Type: cty.DynamicPseudoType, Optional: true, ForceNew: true,
			Description: "Any value; when it changes the object is replaced (destroy, then create)."},
		"id": {Type: cty.String, Computed: true,
			Description: "A random id chosen at create."},
		"stdout": {Type: cty.String, Computed: true, SensitiveWith: []string{"env", "create", "create_script", "update", "update_script", "interpreter"},
			Description: "What the last create or update printed on stdout (at most the last 64 KiB); sensitive when what they ran with (env, the command, the interpreter) holds a sensitive value, since it may print it back."},
	}
	for _, s := range steps {
		attrs[s] = &sdk.Attribute{Type: cty.List(cty.String), Optional: true,
			Description: "An argv, each word one argument. " + stepDescriptions[s]}
		attrs[s+"_script"] = &sdk.Attribute{Type: cty.String, Optional: true,
			Description: "A script, run as INTERPRETER... SCRIPT (one argument, never pasted into a command line). The alternative to " + s + "."}
	}
	return &sdk.ResourceSchema{
		Description: "A command run on a node: create, optional update, destroy and check (exit 0 = present and current, run at refresh so drift is seen). The escape hatch for a step no other resource models; each step is an argv or a script passed as one argument, never a shell string built from values. Without check, plan warns that drift cannot be seen.",
		Block:       &sdk.Block{Attributes: attrs},
		LocalPlan:   true, // Plan runs nothing: check runs at refresh
	}
}()

var objType = schema.Block.ImpliedType()

// spec is a known node_command value, decoded.
type spec struct {
	steps       map[string]step
	interpreter []string
	env         map[string]string
	dir         string
	become      bool
	timeout     time.Duration
}

// step is one command: an argv, or a script run by the interpreter.
type step struct {
	argv   []string
	script string
	set    bool
}

// argv is the command line of st.
func (s *spec) argv(st string) []string {
	x := s.steps[st]
	if x.argv != nil {
		return x.argv
	}
	return append(append([]string(nil), s.interpreter...), x.script)
}

func (s *spec) has(st string) bool { return s.steps[st].set }

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// decode reads v (wholly known, not null) and checks it. Every problem is
// a diagnostic naming its attribute.
func decode(v cty.Value) (*spec, sdk.Diagnostics) {
	var diags sdk.Diagnostics
	s := &spec{steps: map[string]step{}, timeout: DefaultTimeout, interpreter: defaultInterpreter}
	for _, name := range steps {
		av, sv := v.GetAttr(name), v.GetAttr(name+"_script")
		switch {
		case !av.IsNull() && !sv.IsNull():
			diags = append(diags, sdk.Errorf(cty.GetAttrPath(name+"_script"), "Both "+name+" and "+name+"_script",
				"give %s as an argv (%s = [...]) or as a script (%s_script = \"...\"), not both", name, name, name))
		case !av.IsNull():
			argv, d := argvOf(name, av)
			diags = append(diags, d...)
			s.steps[name] = step{argv: argv, set: true}
		case !sv.IsNull():
			sc := sv.AsString()
			if strings.TrimSpace(sc) == "" {
				diags = append(diags, sdk.Errorf(cty.GetAttrPath(name+"_script"), "Empty script",
					"%s_script is empty: give the script, or leave the attribute out", name))
			} else if strings.IndexByte(sc, 0) >= 0 {
				diags = append(diags, sdk.Errorf(cty.GetAttrPath(name+"_script"), "NUL byte in script",
					"%s_script contains a NUL byte, which no command can receive as an argument", name))
			}
			s.steps[name] = step{script: sc, set: true}
		}
	}
	if !s.has(stepCreate) {
		diags = append(diags, sdk.Errorf(cty.GetAttrPath("create"), "Missing create",
			"a node_command needs create = [ARGV...] or create_script = \"...\": the command that makes what it manages"))
	}
	if iv := v.GetAttr("interpreter"); !iv.IsNull() {
		argv, d := argvOf("interpreter", iv)
		diags = append(diags, d...)
		s.interpreter = argv
	}
	if ev := v.GetAttr("env"); !ev.IsNull() {
		s.env = map[string]string{}
		for k, x := range ev.AsValueMap() {
			if !envName.MatchString(k) {
				diags = append(diags, sdk.Errorf(cty.GetAttrPath("env").Index(cty.StringVal(k)), "Invalid environment name",
					"%q is not an environment variable name: use letters, digits and _, not starting with a digit", k))
				continue
			}
			if x.IsNull() {
				diags = append(diags, sdk.Errorf(cty.GetAttrPath("env").Index(cty.StringVal(k)), "Null environment value",
					"env[%q] is null: give a string, or leave the key out", k))
				continue
			}
			if strings.IndexByte(x.AsString(), 0) >= 0 {
				diags = append(diags, sdk.Errorf(cty.GetAttrPath("env").Index(cty.StringVal(k)), "NUL byte in environment value",
					"env[%q] contains a NUL byte, which no command can receive", k))
			}
			s.env[k] = x.AsString()
		}
	}
	if dv := v.GetAttr("dir"); !dv.IsNull() {
		s.dir = dv.AsString()
		if !path.IsAbs(s.dir) || strings.IndexByte(s.dir, 0) >= 0 {
			diags = append(diags, sdk.Errorf(cty.GetAttrPath("dir"), "Invalid dir",
				"dir %q must be an absolute path on the node (without NUL bytes)", s.dir))
		}
	}
	if bv := v.GetAttr("become"); !bv.IsNull() {
		s.become = bv.True()
	}
	if tv := v.GetAttr("timeout"); !tv.IsNull() {
		d, err := time.ParseDuration(tv.AsString())
		switch {
		case err != nil:
			diags = append(diags, sdk.Errorf(cty.GetAttrPath("timeout"), "Invalid timeout",
				"timeout %q is not a duration: write it as Go does, e.g. \"90s\", \"10m\", \"1h30m\"", tv.AsString()))
		case d <= 0:
			diags = append(diags, sdk.Errorf(cty.GetAttrPath("timeout"), "Invalid timeout",
				"timeout %q must be more than zero", tv.AsString()))
		default:
			s.timeout = d
		}
	}
	return s, diags
}

// argvOf reads an argv list: at least one word, no null word, a program
// that does not start with '-' and no NUL bytes.
func argvOf(name string, v cty.Value) ([]string, sdk.Diagnostics) {
	p := cty.GetAttrPath(name)
	if v.LengthInt() == 0 {
		return nil, sdk.Diagnostics{sdk.Errorf(p, "Empty argv",
			"%s is an empty list: give the program and its arguments, e.g. [\"mkdir\", \"-p\", \"/data/x\"]", name)}
	}
	var diags sdk.Diagnostics
	argv := make([]string, 0, v.LengthInt())
	for i, w := range v.AsValueSlice() {
		ip := p.Index(cty.NumberIntVal(int64(i)))
		if w.IsNull() {
			diags = append(diags, sdk.Errorf(ip, "Null argument", "%s[%d] is null: every word must be a string", name, i))
			continue
		}
		s := w.AsString()
		if strings.IndexByte(s, 0) >= 0 {
			diags = append(diags, sdk.Errorf(ip, "NUL byte in argument",
				"%s[%d] contains a NUL byte, which no command can receive as an argument", name, i))
		}
		argv = append(argv, s)
	}
	if len(argv) > 0 && (argv[0] == "" || strings.HasPrefix(argv[0], "-")) {
		diags = append(diags, sdk.Errorf(p.Index(cty.NumberIntVal(0)), "Invalid program",
			"%s[0] is %q: the first word is the program to run and may not be empty or start with '-' (give a path such as ./%s)", name, argv[0], argv[0]))
	}
	return argv, diags
}

// withDefaults fills interpreter and timeout where v leaves them null, or
// unknown while config (when given) leaves them null: the engine proposes
// an Optional+Computed attribute the config omits as unknown.
func withDefaults(v, config cty.Value) cty.Value {
	m := v.AsValueMap()
	unset := func(name string) bool {
		x := m[name]
		return x.IsNull() || !x.IsKnown() && config != cty.NilVal && config.IsKnown() && !config.IsNull() && config.GetAttr(name).IsNull()
	}
	if unset("interpreter") {
		words := make([]cty.Value, len(defaultInterpreter))
		for i, w := range defaultInterpreter {
			words[i] = cty.StringVal(w)
		}
		m["interpreter"] = cty.ListVal(words)
	}
	if unset("timeout") {
		m["timeout"] = cty.StringVal(DefaultTimeout.String())
	}
	return cty.ObjectVal(m)
}

// describe names a step for messages: "create", or "create_script".
func describe(s *spec, st string) string {
	if s.steps[st].argv != nil {
		return st
	}
	return st + "_script"
}
