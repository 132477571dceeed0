// This file holds the checks a plan file passes on read: every field is
// what Write writes, or the file is refused. A plan file is a file: it can
// be damaged or edited, and what apply cannot carry out exactly must be an
// error here (or at apply), never a change silently dropped.

package plans

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/config"
	"github.com/sparkform/sparkform/providers/sdk"
)

// DeposedSuffix marks the address of a replaced object kept until its
// replacement is in place (create_before_destroy): state records it as
// ADDR#deposed, and a plan deletes it under that address.
const DeposedSuffix = "#deposed"

// maxNameLen bounds a name or address read from a plan file; real ones
// are short, and a name is printed in messages.
const maxNameLen = 4096

// plainText reports whether s is printable text of one line: no control
// character, no line or paragraph separator, no bidirectional override,
// valid UTF-8. Names and addresses in a plan file are; one that is not was
// not written by sparkform and could forge lines of output.
func plainText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r) || unicode.Is(unicode.Bidi_Control, r) {
			return false
		}
	}
	return true
}

// checkText refuses an empty, over-long or not plain name.
func checkText(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%s is empty", what)
	case len(s) > maxNameLen:
		return fmt.Errorf("%s is %d bytes long", what, len(s))
	case !plainText(s):
		return fmt.Errorf("%s %q holds control or invisible characters", what, s)
	}
	return nil
}

// checkInstanceAddr refuses an instance address that does not parse or
// is not written the way sparkform writes it (a file with `../`, a
// newline or a NUL in an address). It returns the parsed address.
func checkInstanceAddr(what, s string) (addrs.ResourceInstance, error) {
	if err := checkText(what, s); err != nil {
		return addrs.ResourceInstance{}, err
	}
	s = strings.TrimSuffix(s, DeposedSuffix)
	ri, d := addrs.ParseResourceInstance(s)
	if d.HasErrors() {
		return ri, fmt.Errorf("%s %q is not a resource instance address", what, s)
	}
	if ri.String() != s {
		return ri, fmt.Errorf("%s %q is not written the way sparkform writes it (%s)", what, s, ri)
	}
	return ri, nil
}

// checkNode refuses a node that is neither the zero Node (no node) nor a
// node a configuration can describe.
func checkNode(what string, n sdk.Node) error {
	switch n.Transport {
	case "":
		if !n.Equal(&sdk.Node{}) {
			return fmt.Errorf("%s has no transport but names a node (%q)", what, n.Name)
		}
		return nil
	case "local":
	case "ssh":
		if err := checkText(what+" host", n.Host); err != nil {
			return err
		}
		if n.Port < 1 || n.Port > 65535 {
			return fmt.Errorf("%s port %d is not a TCP port", what, n.Port)
		}
	default:
		return fmt.Errorf("%s transport %q is neither ssh nor local", what, n.Transport)
	}
	for _, s := range append([]string{n.Name, n.HostAlias, n.User, n.IdentityFile, n.KnownHosts}, n.IdentityFiles...) {
		if s != "" && !plainText(s) {
			return fmt.Errorf("%s %q: a field holds control or invisible characters", what, n.Name)
		}
	}
	for i, j := range n.ProxyJump {
		if err := checkNode(fmt.Sprintf("%s proxy jump %d", what, i), j); err != nil {
			return err
		}
	}
	return nil
}

// check refuses what Write never writes: an unknown mode or action, a
// missing lineage or configuration digest, an address that does not parse
// or does not match its resource and type, a bad node, an instance listed
// twice, a drift entry for an instance listed twice. Values are checked
// as they are decoded (checkValues); their types against the provider
// schema, and the plan against state and configuration, at apply.
func (fp *filePlan) check() error {
	switch fp.Mode {
	case NormalMode, DestroyMode, RefreshOnlyMode:
	default:
		return fmt.Errorf("unknown plan mode %q", fp.Mode)
	}
	// A plan made before any state exists (plan -lock=false on a new
	// directory) has no lineage: it applies only to a state never written
	// (serial 0). Any other plan names the state it was made against.
	if fp.Lineage == "" && fp.Serial != 0 {
		return fmt.Errorf("no state lineage (the plan is for serial %d of a state it does not name)", fp.Serial)
	}
	if fp.Lineage != "" {
		if err := checkText("state lineage", fp.Lineage); err != nil {
			return err
		}
	}
	if len(fp.ConfigDigest) != 64 || strings.Trim(fp.ConfigDigest, "0123456789abcdef") != "" {
		return fmt.Errorf("configuration digest %q is not a SHA-256 digest", fp.ConfigDigest)
	}
	if fp.Created.IsZero() {
		return fmt.Errorf("no creation time")
	}
	for name := range fp.Variables {
		if !hclsyntax.ValidIdentifier(name) {
			return fmt.Errorf("variable name %q is not an identifier", name)
		}
	}
	for name := range fp.Outputs {
		if !hclsyntax.ValidIdentifier(name) {
			return fmt.Errorf("output name %q is not an identifier", name)
		}
	}
	for _, x := range fp.Excluded {
		// Printed in plan output and in apply's errors: plain text only.
		if err := checkText("excluded node", x.Node); err != nil {
			return err
		}
		if !plainText(x.Reason) || len(x.Reason) > maxNameLen {
			return fmt.Errorf("the reason node %q is left out is not one line of plain text", x.Node)
		}
		for _, a := range x.Instances {
			if _, err := checkInstanceAddr("excluded instance", a); err != nil {
				return err
			}
		}
	}
	for _, t := range fp.Targets {
		if err := checkText("target", t); err != nil {
			return err
		}
		if _, d := addrs.ParseTargetAny(t); d.HasErrors() {
			return fmt.Errorf("target %q is not a resource or module address", t)
		}
	}
	for _, r := range fp.Replace {
		if _, err := checkInstanceAddr("replace address", r); err != nil {
			return err
		}
	}
	for i, n := range fp.Notes {
		if !utf8.ValidString(n) {
			return fmt.Errorf("note %d is not UTF-8 text", i)
		}
	}
	seen := make(map[string]bool, len(fp.Changes))
	for i, c := range fp.Changes {
		switch c.Action {
		case NoOp, Create, Update, Delete, DeleteThenCreate, CreateThenDelete:
		default:
			return fmt.Errorf("change %d (%q): unknown action %q", i, c.Addr, c.Action)
		}
		if c.Addr == "" || c.Type == "" {
			return fmt.Errorf("change %d: no instance address or resource type", i)
		}
		// A destroy plan only deletes; a refresh-only plan changes nothing.
		if fp.Mode == DestroyMode && c.Action != Delete || fp.Mode == RefreshOnlyMode {
			return fmt.Errorf("change %d (%s): a %s plan does not %s", i, c.Addr, fp.Mode, c.Action)
		}
		ri, err := checkInstanceAddr(fmt.Sprintf("change %d: instance address", i), c.Addr)
		if err != nil {
			return err
		}
		if strings.HasSuffix(c.Addr, DeposedSuffix) && c.Action != Delete {
			return fmt.Errorf("%s: a deposed object is only deleted, not %s", c.Addr, c.Action)
		}
		if c.Resource != ri.Resource.String() || c.Type != ri.Resource.Type {
			return fmt.Errorf("%s: resource %q and type %q do not match the address", c.Addr, c.Resource, c.Type)
		}
		if c.Provider != sdk.ProviderNameOf(c.Type) {
			return fmt.Errorf("%s: provider %q does not serve type %s", c.Addr, c.Provider, c.Type)
		}
		if err := checkNode(c.Addr+": node", c.Node); err != nil {
			return err
		}
		if err := checkNode(c.Addr+": prior node", c.PriorNode); err != nil {
			return err
		}
		for _, d := range c.Dependencies {
			if err := checkText(c.Addr+": dependency", d); err != nil {
				return err
			}
		}
		for _, a := range c.SummaryAttrs {
			if !hclsyntax.ValidIdentifier(a) {
				return fmt.Errorf("%s: attribute name %q is not an identifier", c.Addr, a)
			}
		}
		// Sensitive entries are paths (input.env.TOKEN, args[1]), not names.
		for _, a := range append(append([]string(nil), c.SensitiveAttrs...), c.PriorSensitiveAttrs...) {
			if err := checkSensitivePath(c.Addr, a); err != nil {
				return err
			}
		}
		if seen[c.Addr] {
			return fmt.Errorf("%s is planned twice", c.Addr)
		}
		seen[c.Addr] = true
	}
	drifted := make(map[string]bool, len(fp.Drift))
	for i, d := range fp.Drift {
		ri, err := checkInstanceAddr(fmt.Sprintf("drift %d: instance address", i), d.Addr)
		if err != nil {
			return err
		}
		if d.Type != ri.Resource.Type {
			return fmt.Errorf("drift of %s: type %q does not match the address", d.Addr, d.Type)
		}
		if drifted[d.Addr] {
			return fmt.Errorf("drift of %s is listed twice", d.Addr)
		}
		for _, a := range d.SensitiveAttrs {
			if err := checkSensitivePath("drift of "+d.Addr, a); err != nil {
				return err
			}
		}
		drifted[d.Addr] = true
	}
	return nil
}

// isNull is true for a value the file left out or wrote as null.
func isNull(v cty.Value) bool { return v == cty.NilVal || v.IsNull() }

// checkValues refuses a change whose values do not fit its action (a
// create with a prior object, a delete that leaves one, ...) and drift
// with no prior object: apply would act on something other than what
// the plan shows.
func (p *Plan) checkValues() error {
	for _, c := range p.Changes {
		before, after := !isNull(c.Before), !isNull(c.After)
		var want string
		switch c.Action {
		case Create:
			if before || !after {
				want = "no prior object and a planned one"
			}
		case Delete:
			if !before || after {
				want = "a prior object and no planned one"
			}
		case Update, DeleteThenCreate, CreateThenDelete, NoOp:
			if !before || !after {
				want = "a prior object and a planned one"
			}
		}
		if want != "" {
			return fmt.Errorf("%s: action %s needs %s", c.Addr, c.Action, want)
		}
	}
	froms, tos := map[string]bool{}, map[string]bool{}
	for _, mv := range p.Moves {
		for _, a := range []string{mv.From, mv.To} {
			if _, d := addrs.ParseResourceInstance(a); d.HasErrors() || strings.HasSuffix(a, DeposedSuffix) {
				return fmt.Errorf("move %s -> %s: %q is not a resource instance address", mv.From, mv.To, a)
			}
		}
		if mv.From == mv.To || froms[mv.From] || tos[mv.To] {
			return fmt.Errorf("move %s -> %s: an address moved onto itself or twice", mv.From, mv.To)
		}
		froms[mv.From], tos[mv.To] = true, true
	}
	for _, d := range p.Drift {
		if isNull(d.Before) {
			return fmt.Errorf("drift of %s has no prior object", d.Addr)
		}
		if d.After == cty.NilVal {
			return fmt.Errorf("drift of %s has no value found (null for gone)", d.Addr)
		}
		for _, a := range d.SummaryAttrs {
			if !hclsyntax.ValidIdentifier(a) {
				return fmt.Errorf("drift of %s: attribute name %q is not an identifier", d.Addr, a)
			}
		}
	}
	return nil
}

// checkSensitivePath refuses a sensitive path (see config.SensitivePaths)
// that does not parse or does not start with an attribute name.
func checkSensitivePath(addr, p string) error {
	if err := checkText(addr+": sensitive path", p); err != nil {
		return err
	}
	if err := config.ParseSensitivePath(p); err != nil {
		return fmt.Errorf("%s: %w", addr, err)
	}
	if root, _ := config.SplitSensitivePath(p); !hclsyntax.ValidIdentifier(root) {
		return fmt.Errorf("%s: sensitive path %q does not start with an attribute name", addr, p)
	}
	return nil
}
