package recipeimport

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// The container paths a model and a drafter named only by their hub id
// are bound at, and where the copied hub folder is mounted (HF_HUB_CACHE)
// so that a server given the hub id finds it offline.
const (
	modelTarget = "/model"
	draftTarget = "/draft"
	hubMount    = "/hub"
	// defaultHubDir is var.hub_dir's default when no step names a hub
	// folder: a node-local cache the snapshots are copied into.
	defaultHubDir = "/var/cache/huggingface/hub"
)

var (
	repoIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$`)
	quantRE  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	revRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]*$`)
)

// isRepoID reports whether s is a hub id "ORG/NAME" (not a path).
func isRepoID(s string) bool {
	return repoIDRE.MatchString(s) && !strings.Contains(s, "--") && !strings.Contains(s, "..")
}

// models finds the model and drafter the recipe names: the model key
// (with model_revision, and sparkrun's "ORG/NAME:QUANT" GGUF selector),
// a drafter named by hub id in the speculative-decoding flags of the
// args, and the manifest generator step. Where two of them name the model
// or the drafter they must agree; a contradiction is an error naming both.
func (g *gen) models() error {
	r := g.r
	at := func(key string) string {
		if l := g.meta.keyLines[key]; l > 0 {
			return fmt.Sprintf("%s:%d", g.file, l)
		}
		return g.file
	}
	var model *hubRepo
	switch {
	case r.Model != "":
		id, quant, hasQuant := strings.Cut(r.Model, ":")
		if !isRepoID(id) {
			return fmt.Errorf("%s: model = %q: give the hub id \"ORG/NAME\" (letters, digits, '.', '_', '-'; a GGUF quant may follow as \"ORG/NAME:Q8_0\")", at("model"), r.Model)
		}
		model = &hubRepo{role: "model", repoID: id, revision: "main", target: modelTarget, from: "the model key"}
		if hasQuant {
			if !quantRE.MatchString(quant) {
				return fmt.Errorf("%s: model = %q: the GGUF quant after ':' must be a name such as Q8_0", at("model"), r.Model)
			}
			// sparkrun's selector: only the files of that quant.
			model.include = []string{"*" + quant + "*"}
		}
		if r.ModelRevision != "" {
			if !revRE.MatchString(r.ModelRevision) || strings.Contains(r.ModelRevision, "..") {
				return fmt.Errorf("%s: model_revision = %q: give a 40-hex commit, a branch or a tag (no spaces or \"..\")", at("model_revision"), r.ModelRevision)
			}
			model.revision = r.ModelRevision
		}
	case r.ModelRevision != "":
		return fmt.Errorf("%s: model_revision = %q but the recipe has no model: set model = \"ORG/NAME\" or remove model_revision", at("model_revision"), r.ModelRevision)
	}
	draft, err := drafterIn(append(append([]string{}, r.Entrypoint...), r.Args...))
	if err != nil {
		return fmt.Errorf("%s: %w", at("args"), err)
	}

	if g.manifests != nil {
		g.hub = g.manifests.hub
		for i, hr := range g.manifests.repos {
			hr.role = []string{"model", "drafter"}[i]
			hr.from = "the manifest generator step"
			g.repos = append(g.repos, hr)
		}
		if model != nil {
			first := &g.repos[0]
			if first.repoID != model.repoID {
				return fmt.Errorf("%s: model = %q, but the manifest generator step binds %q as the model: make them name one repository", at("model"), r.Model, first.repoID)
			}
			if r.ModelRevision != "" && r.ModelRevision != first.revision {
				return fmt.Errorf("%s: model_revision = %q, but the manifest generator step binds %s at %q: make them agree", at("model_revision"), r.ModelRevision, first.repoID, first.revision)
			}
			first.include = model.include
		}
		if draft != nil {
			if len(g.repos) == 2 {
				if g.repos[1].repoID != draft.repoID {
					return fmt.Errorf("%s: the args name the drafter %q (%s), but the manifest generator step binds %q as the drafter: make them name one repository", at("args"), draft.repoID, draft.from, g.repos[1].repoID)
				}
			} else {
				g.repos = append(g.repos, *draft)
			}
		}
		return nil
	}
	if model != nil {
		g.repos = append(g.repos, *model)
	}
	if draft != nil {
		g.repos = append(g.repos, *draft)
	}
	return nil
}

// drafterIn finds a speculative-decoding drafter named by hub id in argv:
// vLLM's --speculative-config JSON ("model", "revision") and its older
// --speculative-model, SGLang's --speculative-draft-model-path (and
// --speculative-draft-model-revision). A drafter given as a path, or a
// method without a model (ngram, mtp), is not a hub repository: nil.
func drafterIn(argv []string) (*hubRepo, error) {
	var id, rev, flag string
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name, val, hasEq := strings.Cut(a, "=")
		value := func() string {
			if hasEq {
				return val
			}
			if i+1 < len(argv) {
				i++
				return argv[i]
			}
			return ""
		}
		switch strings.ReplaceAll(name, "_", "-") {
		case "--speculative-model", "--speculative-draft-model-path":
			id, flag = value(), name
		case "--speculative-draft-model-revision":
			rev = value()
		case "--speculative-config":
			raw := value()
			var c struct {
				Model    *string `json:"model"`
				Revision *string `json:"revision"`
			}
			if err := json.Unmarshal([]byte(raw), &c); err != nil {
				return nil, fmt.Errorf("%s %q is not a JSON object: %v", name, raw, err)
			}
			if c.Model != nil {
				id, flag = *c.Model, name+` "model"`
			}
			if c.Revision != nil {
				rev = *c.Revision
			}
		}
	}
	if !isRepoID(id) {
		return nil, nil
	}
	if rev == "" {
		rev = "main"
	} else if !revRE.MatchString(rev) || strings.Contains(rev, "..") {
		return nil, fmt.Errorf("the drafter's revision %q: give a 40-hex commit, a branch or a tag", rev)
	}
	return &hubRepo{role: "drafter", repoID: id, revision: rev, target: draftTarget, from: flag}, nil
}

// copiesHub reports whether the model is copied into var.hub_dir (no
// step names a shared hub folder): the container then gets that folder
// mounted at hubMount with HF_HUB_CACHE pointing at it.
func (g *gen) copiesHub() bool { return len(g.repos) > 0 && g.hub == "" }

// writeModelVariables declares hub_dir (when the snapshots are copied) and
// model_source.
func (g *gen) writeModelVariables(body *hclwrite.Body) {
	if g.copiesHub() {
		v := body.AppendNewBlock("variable", []string{"hub_dir"})
		v.Body().SetAttributeValue("description", cty.StringVal("The hub cache folder on every node the model snapshots are copied into (huggingface_hub's layout), mounted read-only in the container at "+hubMount+"."))
		v.Body().SetAttributeRaw("type", tokens("string"))
		v.Body().SetAttributeValue("default", cty.StringVal(defaultHubDir))
		body.AppendNewline()
	}
	v := body.AppendNewBlock("variable", []string{"model_source"})
	desc := "Where the nodes get the model snapshots (modules/spark-recipe variable model_source): null means hub_dir already holds them (a shared folder); " +
		"{} fetches them on rank 0 from the hub (HF_ENDPOINT, else https://huggingface.co; the token from HF_TOKEN) and copies rank 0's to the other ranks over the cluster link; " +
		"{ local_dir = \"~/.cache/huggingface/hub\" } pushes this machine's hub cache to rank 0; { node = ... } copies from another node."
	v.Body().SetAttributeValue("description", cty.StringVal(desc))
	v.Body().SetAttributeRaw("type", tokens(`object({
  endpoint     = optional(string)
  token_env    = optional(string)
  local_dir    = optional(string)
  node         = optional(any)
  node_hub_dir = optional(string)
  node_address = optional(string)
  transfer     = optional(string)
  peers        = optional(string, "direct")
  keep_free    = optional(string)
  parallel     = optional(number)
})`))
	if g.copiesHub() {
		v.Body().SetAttributeRaw("default", tokens("{}"))
	} else {
		v.Body().SetAttributeRaw("default", tokens("null"))
	}
	body.AppendNewline()
}
