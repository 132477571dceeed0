// This file holds how the engine builds diagnostics: plain errors,
// provider diagnostics placed on the configuration, and the messages
// several phases share.

package engine

import (
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/engine/tfdiags"
	"github.com/sparkform/sparkform/providers/sdk"
)

// errDiag is an error diagnostic with no source range.
func errDiag(summary, detail string) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail}
}

// sdkDiags converts provider diagnostics into hcl ones, pointing at the
// attribute they name when the body has it. body is asked for only for a
// diagnostic that names an attribute: a walk lets most root blocks'
// bodies go (releaseRootBodies), and a call without one parses none
// again.
func sdkDiags(ds sdk.Diagnostics, addr string, body func() hcl.Body, rng *hcl.Range) hcl.Diagnostics {
	var out hcl.Diagnostics
	for _, d := range ds {
		sev := hcl.DiagError
		if d.Severity == sdk.Warning {
			sev = hcl.DiagWarning
		}
		hd := &hcl.Diagnostic{Severity: sev, Summary: d.Summary, Detail: d.Detail}
		if addr != "" {
			hd.Detail = strings.TrimSpace(hd.Detail + "\n\n(" + addr + ")")
			hd.Extra = diagAddress(addr)
		}
		if body != nil && len(d.Path) > 0 {
			hd.Subject = config.AttributeRange(body(), d.Path)
		}
		if hd.Subject == nil && rng != nil {
			r := *rng
			hd.Subject = &r
		}
		out = append(out, hd)
	}
	return out
}

// diagAddress is the Extra of a diagnostic about one resource or
// instance: its address.
type diagAddress string

// DiagnosticAddress is the address of the resource or instance d is
// about ("" when it is about none): Terraform's diagnostic "address".
func DiagnosticAddress(d *hcl.Diagnostic) string {
	a, _ := hcl.DiagnosticExtra[diagAddress](d)
	return string(a)
}

// cannotStart is the diagnostic for a provider that would not start.
func cannotStart(provider string, err error) *hcl.Diagnostic {
	return tfdiags.FromError("Cannot start provider "+provider, err, "")
}

// filterWarnings keeps the warnings of ds.
func filterWarnings(ds sdk.Diagnostics) sdk.Diagnostics {
	var out sdk.Diagnostics
	for _, d := range ds {
		if d.Severity == sdk.Warning {
			out = append(out, d)
		}
	}
	return out
}

// nodeLabel names a node in messages.
func nodeLabel(n sdk.Node) string {
	if n.Name != "" {
		return n.Name
	}
	if n.Transport == "local" {
		return "the local node"
	}
	return fmt.Sprintf("%s@%s:%d", n.User, n.Host, n.Port)
}

// minSecretLen is the shortest sensitive string redact replaces wherever
// it occurs in a message. A shorter one (a "1", a "yes") is replaced
// where it stands alone, not inside a longer word ("token=ab", "value
// \"7\"", but not "about" or "77"): a message then never repeats it as a
// value, and ordinary words that merely contain it stay readable.
const minSecretLen = 4

// secretStrings are the strings (and numbers, as text) at the sensitive
// paths of each value: what a provider's message must not repeat.
func secretStrings(paths []string, vals ...cty.Value) []string {
	if len(paths) == 0 {
		return nil
	}
	var out []string
	var walk func(v cty.Value, in bool)
	walk = func(v cty.Value, in bool) {
		if v == cty.NilVal {
			return
		}
		in = in || v.HasMark(config.SensitiveMark)
		v, _ = v.Unmark()
		if !v.IsKnown() || v.IsNull() {
			return
		}
		ty := v.Type()
		switch {
		case ty == cty.String:
			if in && v.AsString() != "" {
				out = append(out, v.AsString())
			}
		case ty == cty.Number:
			if in {
				out = append(out, v.AsBigFloat().Text('f', -1))
			}
		case ty.IsListType() || ty.IsSetType() || ty.IsTupleType() || ty.IsMapType() || ty.IsObjectType():
			for it := v.ElementIterator(); it.Next(); {
				_, e := it.Element()
				walk(e, in)
			}
		}
	}
	for _, v := range vals {
		if v == cty.NilVal || v.IsNull() || !v.IsKnown() || !v.Type().IsObjectType() {
			continue
		}
		walk(MarkSensitive(v, paths), false)
	}
	// Longest first, so a secret that holds another is replaced whole.
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// redact replaces each secret in the diagnostics' text with "(sensitive
// value)" (see redactString): a provider takes plain values and may quote
// them in an error (an image reference, a command's output), and
// sparkform prints no sensitive value.
func redact(diags hcl.Diagnostics, secrets []string) hcl.Diagnostics {
	if len(secrets) == 0 {
		return diags
	}
	for _, d := range diags {
		d.Summary = redactString(d.Summary, secrets)
		d.Detail = redactString(d.Detail, secrets)
	}
	return diags
}

// redactString is msg with each secret replaced by "(sensitive value)":
// one of minSecretLen characters or more wherever it occurs, a shorter
// one where it stands alone (see minSecretLen). secrets are longest
// first, so a secret that holds another is replaced whole.
func redactString(msg string, secrets []string) string {
	for _, s := range secrets {
		switch {
		case s == "" || !strings.Contains(msg, s):
		case utf8.RuneCountInString(s) >= minSecretLen:
			msg = strings.ReplaceAll(msg, s, sensitiveText)
		default:
			msg = replaceAlone(msg, s)
		}
	}
	return msg
}

const sensitiveText = "(sensitive value)"

// replaceAlone replaces each occurrence of s in msg that no letter,
// digit or underscore touches on either side.
func replaceAlone(msg, s string) string {
	var b strings.Builder
	last := 0 // msg[last:] is not written yet
	for from := 0; ; {
		i := strings.Index(msg[from:], s)
		if i < 0 {
			break
		}
		i += from
		end := i + len(s)
		before, _ := utf8.DecodeLastRuneInString(msg[:i])
		after, _ := utf8.DecodeRuneInString(msg[end:])
		if (i == 0 || !wordRune(before)) && (end == len(msg) || !wordRune(after)) {
			b.WriteString(msg[last:i])
			b.WriteString(sensitiveText)
			last, from = end, end
			continue
		}
		from = i + 1 // s starts with a whole rune: no match starts inside one
	}
	if last == 0 {
		return msg
	}
	b.WriteString(msg[last:])
	return b.String()
}

func wordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// redactedErr is err with the secrets in its message redacted: what a
// diagnostic whose detail is redacted carries (tfdiags), so that printing
// the carried error shows no more than the diagnostic did, while
// errors.Is and errors.As still see err.
type redactedErr struct {
	msg string
	err error
}

func (e *redactedErr) Error() string { return e.msg }
func (e *redactedErr) Unwrap() error { return e.err }

func redactedError(err error, secrets []string) error {
	return &redactedErr{msg: redactString(err.Error(), secrets), err: err}
}
