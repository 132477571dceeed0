package recipeimport

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2/hclwrite"
)

// A mod is a folder of the recipe's repository (mods/NAME) whose run.sh
// patches the serving image; sparkrun copies it into the container and
// runs it at every start. The import inlines every mod's files into one
// node_command that builds a derived image on each node (FROM the
// recipe's image, each mod run once at build), tagged by a hash of the
// base and the files: its check is that the tag is on the node, so a
// changed mod or base is a new tag (replaced), and a removed image is
// drift. A mod that is not in the repository is an error naming it: an
// import that dropped it would serve an unpatched model.

// maxModBytes bounds what is inlined into the configuration.
const maxModBytes = 1 << 20

type modFile struct {
	rel  string // path under the mod folder, slash-separated
	data []byte
	exec bool
}

type mod struct {
	name  string // as the recipe names it
	dir   string // the folder's name under /workspace/mods in the image
	files []modFile
}

// repoRoot is the recipe's repository: opts.RepoDir, else the nearest
// folder above the recipe holding .git, else the recipe's folder.
func repoRoot(file string, opts Options) string {
	if opts.RepoDir != "" {
		return opts.RepoDir
	}
	dir, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		return filepath.Dir(file)
	}
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return dir
		}
		d = up
	}
}

// readMod finds a mod as sparkrun does: "mods/NAME" or "NAME" under the
// repository's mods folder; it must hold run.sh.
func readMod(root, name, hint string) (*mod, error) {
	clean := path.Clean(strings.TrimPrefix(name, "./"))
	if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || clean == "." {
		return nil, fmt.Errorf("mod %q: give a folder of the recipe's repository (mods/NAME)", name)
	}
	rel := clean
	if !strings.HasPrefix(rel, "mods/") {
		rel = "mods/" + rel
	}
	dir := filepath.Join(root, filepath.FromSlash(rel))
	if _, err := os.Stat(filepath.Join(dir, "run.sh")); err != nil {
		return nil, fmt.Errorf("mod %q is not in the recipe's repository: no %s. %s", name, filepath.Join(dir, "run.sh"), hint)
	}
	m := &mod{name: name, dir: path.Base(rel)}
	total := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("mod %q: %s is not a regular file (links are not inlined)", name, p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		total += len(b)
		if total > maxModBytes {
			return fmt.Errorf("mod %q holds more than %d bytes: too large to inline into the configuration; build it into the image instead", name, maxModBytes)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(dir, p)
		m.files = append(m.files, modFile{rel: filepath.ToSlash(r), data: b, exec: info.Mode()&0o111 != 0 || filepath.Base(p) == "run.sh"})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(m.files, func(a, b int) bool { return m.files[a].rel < m.files[b].rel })
	return m, nil
}

// modImage is the node_command that builds the derived image.
type modImage struct {
	base string
	tag  string
	mods []*mod
}

func newModImage(base, name string, mods []*mod) *modImage {
	h := sha256.New()
	fmt.Fprintf(h, "base %s\n", base)
	for _, m := range mods {
		fmt.Fprintf(h, "mod %s\n", m.dir)
		for _, f := range m.files {
			fmt.Fprintf(h, "file %s %v %d\n", f.rel, f.exec, len(f.data))
			h.Write(f.data)
		}
	}
	sum := hex.EncodeToString(h.Sum(nil))
	return &modImage{base: base, tag: "sparkform-mods/" + name + ":" + sum[:16], mods: mods}
}

// heredocMarker ends every inlined file; a file holding it is base64.
const heredocMarker = "SPARKFORM_MOD_EOF"

// script is the build, as a shell script: the mods' files written into a
// fresh build context (text as quoted heredocs, anything else base64),
// then docker build.
func (mi *modImage) script() string {
	var b strings.Builder
	b.WriteString("set -eu\nctx=$(mktemp -d)\ntrap 'rm -rf \"$ctx\"' EXIT\n")
	for _, m := range mi.mods {
		for _, f := range m.files {
			p := "$ctx/mods/" + m.dir + "/" + f.rel
			fmt.Fprintf(&b, "mkdir -p \"$(dirname %s)\"\n", shq(p))
			text := utf8.Valid(f.data) && len(f.data) > 0 && strings.HasSuffix(string(f.data), "\n") && !strings.Contains(string(f.data), heredocMarker) && !strings.ContainsRune(string(f.data), 0)
			if text {
				fmt.Fprintf(&b, "cat > %s <<'%s'\n%s%s\n", shq(p), heredocMarker, f.data, heredocMarker)
			} else {
				fmt.Fprintf(&b, "base64 -d > %s <<'%s'\n%s\n%s\n", shq(p), heredocMarker, wrap(base64.StdEncoding.EncodeToString(f.data), 76), heredocMarker)
			}
			if f.exec {
				fmt.Fprintf(&b, "chmod 755 %s\n", shq(p))
			}
		}
	}
	fmt.Fprintf(&b, "cat > \"$ctx/Dockerfile\" <<'%s'\nFROM %s\nCOPY mods /workspace/mods\n", heredocMarker, mi.base)
	for _, m := range mi.mods {
		// As sparkrun runs a mod: WORKSPACE_DIR is the image's working
		// folder, run.sh runs in the mod's folder.
		fmt.Fprintf(&b, "RUN export WORKSPACE_DIR=$PWD && cd /workspace/mods/%s && chmod +x run.sh && ./run.sh\n", m.dir)
	}
	var names []string
	for _, m := range mi.mods {
		names = append(names, m.dir)
	}
	fmt.Fprintf(&b, "LABEL org.sparkform.mods=%q\n%s\n", strings.Join(names, ","), heredocMarker)
	fmt.Fprintf(&b, "docker build -t %s \"$ctx\"\n", shq(mi.tag))
	return b.String()
}

// shq quotes for sh, leaving $ctx expandable: the only variable used.
func shq(s string) string {
	if rest, ok := strings.CutPrefix(s, "$ctx"); ok {
		return "\"$ctx\"" + shq(rest)
	}
	if s == "" {
		return ""
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func wrap(s string, n int) string {
	var b strings.Builder
	for len(s) > n {
		b.WriteString(s[:n] + "\n")
		s = s[n:]
	}
	b.WriteString(s)
	return b.String()
}

func (g *gen) writeModImage(body *hclwrite.Body) {
	mi := g.modImage
	var names []string
	for _, m := range mi.mods {
		names = append(names, m.name)
	}
	body.AppendUnstructuredTokens(comment(fmt.Sprintf("The recipe's mods (%s), inlined from its repository: each node builds %s", strings.Join(names, ", "), mi.tag)))
	body.AppendUnstructuredTokens(comment("from the recipe's image with every mod run once, as sparkrun runs them in the container. The tag"))
	body.AppendUnstructuredTokens(comment("is a hash of the base and the files: a changed mod is a new image; check sees a removed one."))
	b := body.AppendNewBlock("resource", []string{"node_command", "mods"})
	bb := b.Body()
	bb.SetAttributeRaw("for_each", tokens("var.nodes"))
	bb.SetAttributeRaw("node", tokens("node.spark[each.key]"))
	bb.SetAttributeRaw("become", tokens("true"))
	bb.SetAttributeValue("timeout", ctyStr("30m"))
	bb.SetAttributeRaw("create_script", heredoc(mi.script()))
	bb.SetAttributeRaw("check", strList([]string{"docker", "image", "inspect", "--format", "{{.Id}}", mi.tag}))
	// An image already gone (removed by hand) is destroyed.
	bb.SetAttributeValue("destroy_script", ctyStr(fmt.Sprintf("docker image inspect %s >/dev/null 2>&1 || exit 0\ndocker image rm %s", shq(mi.tag), shq(mi.tag))))
}

// scriptStep inlines a { script = PATH } step whose script is a file of
// the recipe's repository (or a mod folder's run.sh): it runs on the node
// as the launcher runs it, and records the script's hash, which check
// compares, so a step that did not run (or ran an older script) is seen.
func (g *gen) scriptStep(phase string, i, line int, name, onFailure string) error {
	clean := path.Clean(name)
	if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		return fmt.Errorf("the step's script %q: give a path in the recipe's repository", name)
	}
	p := filepath.Join(g.root, filepath.FromSlash(clean))
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		p = filepath.Join(p, "run.sh")
	}
	b, err := os.ReadFile(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("the %s step's script %q is not a script sparkform knows (unlock_display_ram, restore_display_ram) nor a file of the recipe's repository (%s): give the repository with -repo DIR, or replace the step with what it does", phase, name, g.root)
		}
		return err
	}
	if len(b) > maxModBytes {
		return fmt.Errorf("the step's script %q is larger than %d bytes: too large to inline", name, maxModBytes)
	}
	sum := sha256.Sum256(b)
	hash := hex.EncodeToString(sum[:])
	rname := fmt.Sprintf("%s_%d", phase, i+1)
	marker := "/var/lib/sparkform/steps/" + g.containerName() + "." + rname
	var s strings.Builder
	body := string(b)
	if !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	mk := heredocMarker
	for strings.Contains(body, mk) {
		mk += "_"
	}
	fmt.Fprintf(&s, "set -eu\n/bin/sh -eu <<'%s'\n%s%s\n", mk, body, mk)
	if phase != "after_stop" {
		fmt.Fprintf(&s, "mkdir -p %s\nprintf '%%s\\n' %s > %s\n", shq(path.Dir(marker)), hash, shq(marker))
	}
	g.commands = append(g.commands, command{name: rname, phase: phase, script: s.String(), line: line, onFailure: onFailure,
		inlined: clean, check: fmt.Sprintf("test \"$(cat %s 2>/dev/null)\" = %s", shq(marker), hash), marker: marker})
	return nil
}
