package config

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/sparkform/sparkform/engine/addrs"
)

// EnvVarPrefix prefixes environment variables that set input variables:
// SPARKFORM_VAR_nodes sets var.nodes.
const EnvVarPrefix = "SPARKFORM_VAR_"

// VarSource is one -var or -var-file flag, in command-line order.
type VarSource struct {
	Kind  string // "var" (Value is NAME=VALUE) or "file" (Value is a path)
	Value string
}

// Prompter asks the user for a required variable that has no value. It
// returns the raw text (parsed like a -var value) and false when the user
// gave none.
type Prompter func(v *Variable) (string, bool)

// ResolveVariables computes every declared variable's value: -var and
// -var-file in order (later wins), then SPARKFORM_VAR_NAME from environ,
// then defaults. Values are converted to the declared type and validated.
func ResolveVariables(m *Module, sources []VarSource, environ []string) (map[string]cty.Value, hcl.Diagnostics) {
	return ResolveVariablesPrompt(m, sources, environ, nil)
}

// rawVar is a value before conversion, with where it came from.
type rawVar struct {
	val  cty.Value
	rng  *hcl.Range // nil unless it came from a file
	from string
}

// ResolveVariablesPrompt is ResolveVariables with a hook for required
// variables that have no value (nil: they are errors).
func ResolveVariablesPrompt(m *Module, sources []VarSource, environ []string, prompt Prompter) (map[string]cty.Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	raw := map[string]rawVar{}
	// failed holds variables whose given value was already reported bad,
	// so they are not reported missing as well.
	failed := map[string]bool{}
	declared := m.variableNames()

	// Environment first: any flag overrides it.
	for _, kv := range environ {
		if !strings.HasPrefix(kv, EnvVarPrefix) {
			continue
		}
		name, value, _ := strings.Cut(strings.TrimPrefix(kv, EnvVarPrefix), "=")
		v, ok := m.Variables[name]
		if !ok {
			continue // shared environments may set variables of other configs
		}
		from := "environment variable " + EnvVarPrefix + name
		val, d := parseRawValue(value, v.Type, from)
		diags = append(diags, d...)
		if d.HasErrors() {
			failed[name] = true
		} else {
			raw[name] = rawVar{val: val, from: from}
		}
	}
	for _, src := range sources {
		switch src.Kind {
		case "var":
			name, value, ok := strings.Cut(src.Value, "=")
			name = strings.TrimSpace(name)
			if !ok || name == "" {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid -var option",
					Detail: fmt.Sprintf("-var %q is not NAME=VALUE. Write e.g. -var 'image=busybox:1.36' or -var 'nodes={a={host=\"10.0.0.1\"}}'.", src.Value)})
				continue
			}
			v, ok := m.Variables[name]
			if !ok {
				diags = append(diags, undeclaredVar(name, "-var", declared, nil, hcl.DiagError))
				continue
			}
			from := "-var " + name
			val, d := parseRawValue(value, v.Type, from)
			diags = append(diags, d...)
			if d.HasErrors() {
				failed[name] = true
			} else {
				raw[name] = rawVar{val: val, from: from}
			}
		case "file":
			diags = append(diags, m.readVarFile(src.Value, raw, failed, declared)...)
		default:
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid variable source",
				Detail: fmt.Sprintf("Variable source kind %q is not \"var\" or \"file\" (a bug in the caller).", src.Kind)})
		}
	}

	out := map[string]cty.Value{}
	for _, name := range declared {
		v := m.Variables[name]
		r, ok := raw[name]
		switch {
		case ok:
		case failed[name]:
			continue
		case v.Default != cty.NilVal:
			out[name] = v.Default // converted at load time
			continue
		case prompt != nil:
			if text, ok := prompt(v); ok {
				val, d := parseRawValue(text, v.Type, "input for var."+name)
				diags = append(diags, d...)
				if d.HasErrors() {
					continue
				}
				r = rawVar{val: val, from: "input for var." + name}
				break
			}
			fallthrough
		default:
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "No value for required variable",
				Detail: fmt.Sprintf("Variable %q has no default, so it needs a value: pass -var '%s=VALUE', put %s = VALUE in a -var-file, or set %s%s in the environment.",
					name, name, name, EnvVarPrefix, name),
				Subject: v.DeclRange.Ptr()})
			continue
		}
		val := r.val
		if v.typeDefaults != nil {
			val = v.typeDefaults.Apply(val)
		}
		cv, err := convert.Convert(val, v.Type)
		if err != nil {
			subj := r.rng
			if subj == nil {
				subj = v.DeclRange.Ptr()
			}
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value for variable",
				Detail:  fmt.Sprintf("The value of var.%s from %s does not match its type %s: %s.", name, r.from, typeString(v.Type), convErr(err)),
				Subject: subj})
			continue
		}
		out[name] = cv
	}
	if diags.HasErrors() {
		return out, diags
	}
	diags = append(diags, m.validateVariables(out)...)
	return out, diags
}

func (m *Module) variableNames() []string {
	names := make([]string, 0, len(m.Variables))
	for n := range m.Variables {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func undeclaredVar(name, where string, declared []string, rng *hcl.Range, sev hcl.DiagnosticSeverity) *hcl.Diagnostic {
	detail := fmt.Sprintf("%s sets %q, but the configuration declares no variable of that name.", where, name)
	if s := addrs.Suggest(name, declared); s != "" {
		detail += fmt.Sprintf(" Did you mean %q?", s)
	} else {
		detail += fmt.Sprintf(" Declare it with a variable %q {} block, or remove the value.", name)
	}
	return &hcl.Diagnostic{Severity: sev, Summary: "Value for undeclared variable", Detail: detail, Subject: rng}
}

// parseRawValue reads a -var / environment / prompt value: strings (and
// variables without a type) take the text as is; anything else is an HCL
// expression such as ["a", "b"] or {a = 1}.
func parseRawValue(text string, ty cty.Type, from string) (cty.Value, hcl.Diagnostics) {
	if ty == cty.DynamicPseudoType || ty.IsPrimitiveType() {
		return cty.StringVal(text), nil
	}
	expr, diags := hclsyntax.ParseExpression([]byte(text), "<value for "+from+">", hcl.InitialPos)
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	return expr.Value(nil)
}

func (m *Module) readVarFile(path string, raw map[string]rawVar, failed map[string]bool, declared []string) hcl.Diagnostics {
	src, err := os.ReadFile(path)
	if err != nil {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read variables file",
			Detail: fmt.Sprintf("%s. Check the -var-file path (it is relative to the working directory).", err)}}
	}
	p := hclparse.NewParser()
	var f *hcl.File
	var diags hcl.Diagnostics
	if strings.HasSuffix(path, ".json") {
		f, diags = p.ParseJSON(src, path)
	} else {
		f, diags = p.ParseHCL(src, path)
	}
	if f != nil {
		m.Files[path] = f // so its diagnostics render with snippets
		if m.VarFiles == nil {
			m.VarFiles = map[string]bool{}
		}
		m.VarFiles[path] = true
	}
	if diags.HasErrors() {
		return diags
	}
	attrs, d := f.Body.JustAttributes()
	diags = append(diags, d...)
	for _, a := range sortedAttrs(attrs) {
		if _, ok := m.Variables[a.Name]; !ok {
			// A warning, as in Terraform: one file often serves several
			// configurations.
			diags = append(diags, undeclaredVar(a.Name, "The file "+path, declared, a.NameRange.Ptr(), hcl.DiagWarning))
			continue
		}
		val, d := a.Expr.Value(nil)
		diags = append(diags, d...)
		if d.HasErrors() {
			failed[a.Name] = true
			continue
		}
		raw[a.Name] = rawVar{val: val, rng: a.Expr.Range().Ptr(), from: path}
	}
	return diags
}

// validateVariables runs every validation block against the resolved
// values.
func (m *Module) validateVariables(vals map[string]cty.Value) hcl.Diagnostics {
	var diags hcl.Diagnostics
	ctx := &hcl.EvalContext{
		// Marked: an error_message made from a sensitive variable is not shown.
		Variables: map[string]cty.Value{"var": objectOf(MarkVariables(m, vals))},
		Functions: cachedFunctions(m.Dir),
	}
	for _, name := range m.variableNames() {
		v := m.Variables[name]
		if _, ok := vals[name]; !ok {
			continue
		}
		for _, val := range v.Validations {
			cond, d := val.Condition.Value(ctx)
			diags = append(diags, d...)
			if d.HasErrors() {
				continue
			}
			cond, _ = cond.UnmarkDeep() // a sensitive() default
			if cond.IsNull() || !cond.IsKnown() {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid validation result",
					Detail: "The condition gave null or an unknown value; it must be true or false.", Subject: val.Condition.Range().Ptr()})
				continue
			}
			cond, err := convert.Convert(cond, cty.Bool)
			if err != nil {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid validation result",
					Detail: fmt.Sprintf("The condition must be true or false, not %s.", cond.Type().FriendlyName()), Subject: val.Condition.Range().Ptr()})
				continue
			}
			if cond.True() {
				continue
			}
			msg := validationMessage(val.ErrorMessage, ctx, fmt.Sprintf("The value of var.%s failed its validation.", name))
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid value for variable",
				Detail:  fmt.Sprintf("%s\n\nThis was checked by the validation rule at %s.", msg, posString(val.DeclRange)),
				Subject: val.Condition.Range().Ptr()})
		}
	}
	return diags
}
