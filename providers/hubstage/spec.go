package hubstage

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/sdk"
)

// spec is the configuration of one hubstage_manifest instance, checked.
type spec struct {
	HubDir       string
	RepoID       string
	RepoType     string
	Revision     string
	Target       string
	Include      []string
	Exclude      []string
	ManifestPath string

	include, exclude []*regexp.Regexp
}

var (
	hex40      = regexp.MustCompile(`^[0-9a-f]{40}$`)
	repoIDPart = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

// repoDir is the repo's folder name in the hub: models--ORG--NAME.
func (s *spec) repoDir() string {
	return s.RepoType + "s--" + repoFlat(s.RepoID)
}

// repoFlat is ORG/NAME as the hub names its folder: ORG--NAME.
func repoFlat(id string) string { return strings.ReplaceAll(id, "/", "--") }

// check validates every field and compiles the globs. Errors wrap
// ErrBadConfig and say what to write instead.
func (s *spec) check() error {
	if err := checkNodePath("hub_dir", s.HubDir); err != nil {
		return err
	}
	if err := checkRepoID(s.RepoID); err != nil {
		return err
	}
	if s.RepoType != "model" && s.RepoType != "dataset" {
		return fmt.Errorf("%w: repo_type %q: use \"model\" or \"dataset\"", ErrBadConfig, s.RepoType)
	}
	if err := checkRevision(s.Revision); err != nil {
		return err
	}
	if err := checkTarget(s.Target); err != nil {
		return err
	}
	if s.ManifestPath != "" {
		if err := checkNodePath("manifest_path", s.ManifestPath); err != nil {
			return err
		}
		if s.ManifestPath == "/" || strings.HasSuffix(s.ManifestPath, "/") {
			return fmt.Errorf("%w: manifest_path %q names a folder; give a file path such as /tmp/model-mounts.txt", ErrBadConfig, s.ManifestPath)
		}
	}
	var err error
	if s.include, err = compileGlobs("include", s.Include); err != nil {
		return err
	}
	if s.exclude, err = compileGlobs("exclude", s.Exclude); err != nil {
		return err
	}
	return nil
}

func checkNodePath(attr, p string) error {
	if !path.IsAbs(p) {
		return fmt.Errorf("%w: %s %q is not an absolute path on the node", ErrBadConfig, attr, p)
	}
	if strings.ContainsAny(p, "\t\n\x00") {
		return fmt.Errorf("%w: %s %q holds a tab, newline or NUL, which the manifest format cannot carry", ErrBadConfig, attr, p)
	}
	return nil
}

func checkRepoID(id string) error {
	parts := strings.Split(id, "/")
	bad := len(parts) > 2 || strings.Contains(id, "--") || strings.Contains(id, "..")
	for _, p := range parts {
		if !repoIDPart.MatchString(p) {
			bad = true
		}
	}
	if bad {
		return fmt.Errorf("%w: repo_id %q: use the hub id \"ORG/NAME\" (letters, digits, '-', '_', '.'; no \"--\" or \"..\")", ErrBadConfig, id)
	}
	return nil
}

func checkRevision(rev string) error {
	if hex40.MatchString(rev) {
		return nil
	}
	bad := rev == "" || strings.HasPrefix(rev, "/") || strings.HasSuffix(rev, "/") || strings.HasPrefix(rev, "-")
	for _, seg := range strings.Split(rev, "/") {
		if seg == "" || seg == "." || seg == ".." {
			bad = true
		}
	}
	for _, r := range rev {
		if r < 0x21 || r == 0x7f || r == '\\' {
			bad = true
		}
	}
	if bad {
		return fmt.Errorf("%w: revision %q: give a 40-hex commit or a ref name such as \"main\" or \"refs/pr/1\" (no \"..\", spaces or leading '/')", ErrBadConfig, rev)
	}
	return nil
}

func checkTarget(t string) error {
	if !path.IsAbs(t) || path.Clean(t) != t || t == "/" {
		return fmt.Errorf("%w: target %q: give a clean absolute container folder below /, such as \"/model\"", ErrBadConfig, t)
	}
	if strings.ContainsAny(t, "\t\n\x00:") {
		return fmt.Errorf("%w: target %q holds a tab, newline, NUL or ':', which a bind cannot carry", ErrBadConfig, t)
	}
	return nil
}

// compileGlobs turns huggingface_hub allow/ignore patterns into regexps
// with fnmatch semantics (as snapshot_download applies them): '*' matches
// any run of characters including '/', '?' one character, [...] a class;
// a pattern ending in '/' matches everything below that folder.
func compileGlobs(attr string, pats []string) ([]*regexp.Regexp, error) {
	out := make([]*regexp.Regexp, 0, len(pats))
	for _, p := range pats {
		re, err := globRegexp(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %s pattern %q: %v", ErrBadConfig, attr, p, err)
		}
		out = append(out, re)
	}
	return out, nil
}

func globRegexp(p string) (*regexp.Regexp, error) {
	if p == "" {
		return nil, fmt.Errorf("empty pattern")
	}
	if strings.HasSuffix(p, "/") {
		p += "*"
	}
	var b strings.Builder
	b.WriteString(`^`)
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '*':
			b.WriteString(`.*`)
		case '?':
			b.WriteString(`.`)
		case '[':
			j := i + 1
			if j < len(p) && (p[j] == '!' || p[j] == '^') {
				j++
			}
			if j < len(p) && p[j] == ']' {
				j++
			}
			for j < len(p) && p[j] != ']' {
				j++
			}
			if j >= len(p) {
				return nil, fmt.Errorf("unclosed '[': write \"[[]\" for a literal '['")
			}
			class := p[i+1 : j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i = j
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString(`$`)
	return regexp.Compile(b.String())
}

// selected reports whether rel (path relative to the snapshot) passes the
// include and exclude patterns.
func (s *spec) selected(rel string) bool { return globsPass(s.include, s.exclude, rel) }

// globsPass reports whether rel matches one of include (when any) and
// none of exclude.
func globsPass(include, exclude []*regexp.Regexp, rel string) bool {
	if len(include) > 0 {
		ok := false
		for _, re := range include {
			if re.MatchString(rel) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	for _, re := range exclude {
		if re.MatchString(rel) {
			return false
		}
	}
	return true
}

// configCheck collects a config's validation diagnostics attribute by
// attribute (an unknown or null attribute is skipped, so a config with
// unknowns still gets its other errors): what hubstage_manifest and
// hubstage_snapshot check alike.
type configCheck struct {
	config cty.Value
	diags  sdk.Diagnostics
}

// bad records err (if any) against attr, without the ErrBadConfig prefix.
func (c *configCheck) bad(attr string, err error) {
	if err != nil {
		c.diags = append(c.diags, sdk.Errorf(sdk.AttrPath(attr), "Invalid "+attr, "%s", strings.TrimPrefix(err.Error(), ErrBadConfig.Error()+": ")))
	}
}

// str is attr's string value, when known and set.
func (c *configCheck) str(attr string) (string, bool) {
	v := c.config.GetAttr(attr)
	if v.IsNull() || !v.IsKnown() {
		return "", false
	}
	return v.AsString(), true
}

// repo checks what names a snapshot in a hub: hub_dir, repo_id, repo_type,
// revision, and the include/exclude patterns.
func (c *configCheck) repo() {
	if v, ok := c.str("hub_dir"); ok {
		c.bad("hub_dir", checkNodePath("hub_dir", v))
	}
	if v, ok := c.str("repo_id"); ok {
		c.bad("repo_id", checkRepoID(v))
	}
	if v, ok := c.str("repo_type"); ok && v != "model" && v != "dataset" {
		c.bad("repo_type", fmt.Errorf("repo_type %q: use \"model\" or \"dataset\"", v))
	}
	if v, ok := c.str("revision"); ok {
		c.bad("revision", checkRevision(v))
	}
	for _, attr := range []string{"include", "exclude"} {
		v := c.config.GetAttr(attr)
		if v.IsNull() || !v.IsKnown() {
			continue
		}
		for it := v.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			if ev.IsNull() {
				c.bad(attr, fmt.Errorf("%s holds a null pattern", attr))
				continue
			}
			if !ev.IsKnown() {
				continue
			}
			if _, err := globRegexp(ev.AsString()); err != nil {
				c.bad(attr, fmt.Errorf("%s pattern %q: %v", attr, ev.AsString(), err))
			}
		}
	}
}
