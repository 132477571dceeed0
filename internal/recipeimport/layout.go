package recipeimport

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// ErrNoImage is what Options.RepoDigests returns (wrapped) when the node
// does not have the image.
var ErrNoImage = errors.New("the node does not have the image")

// layout is the recipe's parallel layout: tensor and pipeline parallel
// sizes and GPUs per node (given, or tp x pp spread evenly over the nodes,
// else 1).
func (g *gen) layout() (tp, pp, gpus int) {
	r := g.r
	tp, pp, gpus = 1, 1, 1
	if r.TensorParallelSize != nil {
		tp = *r.TensorParallelSize
	}
	if r.PipelineParallelSize != nil {
		pp = *r.PipelineParallelSize
	}
	if r.GPUsPerNode != nil {
		gpus = *r.GPUsPerNode
	} else if *r.RequiredNodes > 0 && tp*pp%*r.RequiredNodes == 0 {
		gpus = tp * pp / *r.RequiredNodes
	}
	return tp, pp, gpus
}

// checkLayout refuses a layout no node set can serve: a parallel size
// that does not divide the GPUs, and Ray on one node (a Ray cluster is a
// head and at least one worker: on one node the recipe wants "mp").
func (g *gen) checkLayout() error {
	nodes := *g.r.RequiredNodes
	if nodes < 1 {
		return fmt.Errorf("%s: required_nodes = %d: a recipe runs on 1 or more nodes", g.file, nodes)
	}
	tp, pp, gpus := g.layout()
	if tp < 1 || pp < 1 || gpus < 1 {
		return fmt.Errorf("%s: tensor_parallel_size, pipeline_parallel_size and gpus_per_node are 1 or more", g.file)
	}
	all := nodes * gpus
	at := g.at("tensor_parallel_size", "tensor_parallel")
	switch {
	case all%(tp*pp) != 0:
		return fmt.Errorf("%s: tensor parallel %d x pipeline parallel %d does not divide the %d GPUs (%d node(s) x %d): every GPU serves one shard, so tp x pp must equal the GPUs; change the parallel sizes or the node count", at, tp, pp, all, nodes, gpus)
	case all != tp*pp:
		return fmt.Errorf("%s: tensor parallel %d x pipeline parallel %d uses %d of the %d GPUs (%d node(s) x %d): the recipe module serves one model replica, so tp x pp must equal the GPUs; change the parallel sizes or the node count", at, tp, pp, tp*pp, all, nodes, gpus)
	}
	if g.r.DistributedBackend == "ray" && nodes == 1 {
		return fmt.Errorf("%s: distributed_backend = \"ray\" on one node: a Ray cluster needs 2 or more nodes (a head and its workers); use \"mp\" on one node", g.at("distributed_backend", ""))
	}
	return nil
}

// images decides what the containers run: the recipe's image, pinned to
// the digest a node holds when it is unpinned and -pin-from asks one,
// then the mods built on it.
func (g *gen) images() error {
	g.image = g.r.DockerImage
	if unpinned(g.image) {
		pinned := false
		if g.opts.RepoDigests != nil {
			digests, err := g.opts.RepoDigests(g.image)
			switch {
			case errors.Is(err, ErrNoImage):
				g.warnings = append(g.warnings, Warning{Line: g.imageLine(), Message: fmt.Sprintf("%s does not have %s, so it cannot be pinned; pull it there and import again", g.opts.PinFrom, g.image)})
			case err != nil:
				return fmt.Errorf("%s: asking %s for the digest of %s: %w", g.file, g.opts.PinFrom, g.image, err)
			default:
				if d := pickDigest(g.image, digests); d != "" {
					g.imageNote = append(g.imageNote, fmt.Sprintf("%s, pinned to the digest %s has (import -pin-from).", g.image, g.opts.PinFrom))
					g.image = d
					pinned = true
				} else {
					g.warnings = append(g.warnings, Warning{Line: g.imageLine(), Message: fmt.Sprintf("%s has %s but no registry digest for it (built or loaded there, never pulled), so it cannot be pinned", g.opts.PinFrom, g.image)})
				}
			}
		}
		if !pinned {
			g.warnings = append(g.warnings, Warning{Line: g.imageLine(), Message: fmt.Sprintf("the image %s is unpinned (%s): the tag can move to other bytes, so sparkform cannot see that drift. Pin a digest (IMAGE@sha256:...), or import with -pin-from NODE to pin the digest of the image a node has", g.image, unpinnedWhy(g.image))})
		}
	}
	if g.yaml != nil && len(g.yaml.buildArgs) > 0 {
		g.warnings = append(g.warnings, Warning{Line: g.yaml.keyLines["build_args"], Message: fmt.Sprintf("build_args %s: sparkrun builds %s with eugr's build-and-copy.sh; sparkform does not build it: build it on the nodes (or push it to a registry) before apply", strings.Join(g.yaml.buildArgs, " "), g.r.DockerImage)})
	}
	if g.yaml != nil && len(g.yaml.mods) > 0 {
		var mods []*mod
		for _, name := range g.yaml.mods {
			hint := "Give the repository that holds it with -repo DIR, or remove the mod"
			if g.yaml.eugrMods() {
				hint = "sparkrun takes this recipe's mods from eugr's repository (builder eugr, a v1 recipe, or a spark-arena eugr nightly image): clone https://github.com/eugr/spark-vllm-docker and give it with -repo DIR"
			}
			m, err := readMod(g.root, name, hint)
			if err != nil {
				return fmt.Errorf("%s:%d: %w", g.file, g.yaml.keyLines["mods"], err)
			}
			mods = append(mods, m)
		}
		g.modImage = newModImage(g.image, g.containerName(), mods)
		g.image = g.modImage.tag
	}
	return nil
}

func (g *gen) imageLine() int {
	if g.yaml != nil {
		return g.yaml.keyLines["container"]
	}
	return g.meta.keyLines["docker_image"]
}

// splitRef splits an image reference into its repository, tag and digest.
func splitRef(ref string) (repo, tag, digest string) {
	repo, digest, _ = strings.Cut(ref, "@")
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo, tag = repo[:i], repo[i+1:]
	}
	return repo, tag, digest
}

// unpinned reports whether an image reference can move: no digest, and
// no tag or "latest".
func unpinned(ref string) bool {
	_, tag, digest := splitRef(ref)
	return digest == "" && (tag == "" || tag == "latest")
}

func unpinnedWhy(ref string) string {
	if _, tag, _ := splitRef(ref); tag == "latest" {
		return ":latest"
	}
	return "no tag: Docker takes :latest"
}

// pickDigest picks the digest of ref's repository among a node's
// RepoDigests (Docker lists Docker Hub images in their short form).
func pickDigest(ref string, digests []string) string {
	repo, _, _ := splitRef(ref)
	norm := func(r string) string {
		r = strings.TrimPrefix(r, "docker.io/")
		r = strings.TrimPrefix(r, "index.docker.io/")
		return strings.TrimPrefix(r, "library/")
	}
	for _, d := range digests {
		r, _, dg := splitRef(d)
		if dg != "" && norm(r) == norm(repo) {
			return d
		}
	}
	return ""
}

// containerName is the name the containers get (rank appended).
func (g *gen) containerName() string {
	return containerName(g.r.Name, path.Base(g.file))
}

// servePort is the port the recipe serves on (sparkrun's defaults.port),
// the default of each node's serve_port.
func (g *gen) servePort() int {
	if g.yaml != nil {
		if v, ok := g.yaml.defaults["port"]; ok {
			if n, err := strconv.Atoi(fmt.Sprint(v)); err == nil && n > 0 && n < 65536 {
				return n
			}
		}
	}
	return 8000
}

// yamlSummary says where a sparkrun recipe's layout came from.
func (g *gen) yamlSummary() string {
	tp, pp, _ := g.layout()
	nodes := *g.r.RequiredNodes
	s := fmt.Sprintf("sparkrun recipe (format v%s): %d DGX Spark node(s), one GPU each, tensor parallel %d x pipeline parallel %d", g.yaml.version, nodes, tp, pp)
	if g.r.DistributedBackend != "" {
		s += fmt.Sprintf(", vLLM backend %q", g.r.DistributedBackend)
	}
	return s + "; the command's {placeholders} are filled from its defaults."
}

func (g *gen) writeInlined(body *hclwrite.Body, c command) {
	where := ""
	if c.line > 0 {
		where = fmt.Sprintf(" (line %d)", c.line)
	}
	body.AppendUnstructuredTokens(comment(fmt.Sprintf("The %s step%s runs %s of the recipe's repository, inlined here.", c.phase, where, c.inlined)))
	b := body.AppendNewBlock("resource", []string{"node_command", c.name})
	bb := b.Body()
	bb.SetAttributeRaw("for_each", tokens("var.nodes"))
	bb.SetAttributeRaw("node", tokens("node.spark[each.key]"))
	bb.SetAttributeRaw("become", tokens("true"))
	if c.phase == "after_stop" {
		// Run when the container is gone: at destroy, as the launcher runs
		// it after stopping.
		bb.SetAttributeRaw("create", tokens(`["true"]`))
		bb.SetAttributeRaw("destroy_script", heredoc(c.script))
	} else {
		body := c.script
		bb.AppendUnstructuredTokens(comment("check: the script's hash, recorded on the node when it ran, is this script's."))
		bb.SetAttributeRaw("create_script", heredoc(body))
		bb.SetAttributeValue("check_script", ctyStr(c.check))
		bb.SetAttributeRaw("destroy", strList([]string{"rm", "-f", c.marker}))
	}
	if c.onFailure != "" {
		bb.AppendUnstructuredTokens(comment(fmt.Sprintf("on_failure = %q in the recipe: a failing command stops the apply (or destroy), and a later run retries it.", c.onFailure)))
	}
}

func ctyStr(s string) cty.Value { return cty.StringVal(s) }

// at is FILE:LINE of a TOML key, or of a sparkrun recipe's defaults key
// (FILE alone when the recipe does not write it).
func (g *gen) at(tomlKey, yamlDefault string) string {
	l := g.meta.keyLines[tomlKey]
	if g.yaml != nil {
		l = g.yaml.defaultsLine[yamlDefault]
	}
	if l > 0 {
		return fmt.Sprintf("%s:%d", g.file, l)
	}
	return g.file
}

// writeEnvVariables declares a sensitive variable for each env value a
// sparkrun recipe takes from the shell (HF_TOKEN: "${HF_TOKEN}", or "Bearer $TOKEN"): given
// with SPARKFORM_VAR_env_NAME or -var, never written into the config.
func (g *gen) writeEnvVariables(body *hclwrite.Body) {
	if g.yaml == nil {
		return
	}
	seen := map[string]bool{}
	var names []string
	for _, k := range g.envOrder() {
		if !g.yaml.envVars[k] {
			continue
		}
		for _, n := range shellNames(g.r.Env[k]) {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	for _, n := range names {
		v := body.AppendNewBlock("variable", []string{envVarName(n)})
		v.Body().SetAttributeValue("description", cty.StringVal(fmt.Sprintf("$%s, which sparkrun reads from your shell for the container's env: give it with SPARKFORM_VAR_%s=... (or -var), never in a file; sensitive, so plans do not show it.", n, envVarName(n))))
		v.Body().SetAttributeRaw("type", tokens("string"))
		v.Body().SetAttributeRaw("sensitive", tokens("true"))
		body.AppendNewline()
	}
}
