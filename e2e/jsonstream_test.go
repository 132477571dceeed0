package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	tfjson "github.com/hashicorp/terraform-json"
)

// uiMessage is one line of the -json stream, shaped as Terraform's
// machine-readable UI documents it.
type uiMessage struct {
	Level     string `json:"@level"`
	Message   string `json:"@message"`
	Module    string `json:"@module"`
	Timestamp string `json:"@timestamp"`
	Type      string `json:"type"`
	Change    *struct {
		Resource uiResource `json:"resource"`
		Action   string     `json:"action"`
	} `json:"change"`
	Hook *struct {
		Resource uiResource `json:"resource"`
		Action   string     `json:"action"`
		IDKey    string     `json:"id_key"`
		IDValue  string     `json:"id_value"`
	} `json:"hook"`
	Changes *struct {
		Add, Change, Remove int
		Operation           string
	} `json:"changes"`
	Outputs map[string]struct {
		Sensitive bool `json:"sensitive"`
		Value     any  `json:"value"`
	} `json:"outputs"`
}

// uiResource is Terraform's resource object, and sparkform's node.
type uiResource struct {
	Addr            string `json:"addr"`
	Module          string `json:"module"`
	Resource        string `json:"resource"`
	ImpliedProvider string `json:"implied_provider"`
	Type            string `json:"resource_type"`
	Name            string `json:"resource_name"`
	Node            string `json:"node"`
}

func (r uiResource) complete() bool {
	full := r.Resource
	if r.Module != "" {
		full = r.Module + "." + full
	}
	return r.Addr != "" && full == r.Addr && r.ImpliedProvider != "" && r.Type != "" && r.Name != ""
}

// checkApplyStream decodes every line of a first `apply -json` of the seed
// (n creates) and checks the sequence: version first; n planned creates
// on the nodes; the plan summary; each instance started once and
// completed once, none errored, no container started before the module
// reload and its node's manifests completed; the apply summary; the
// outputs last.
func checkApplyStream(t *testing.T, stdout string, n int) {
	t.Helper()
	var msgs []uiMessage
	for i, line := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		var m uiMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("apply -json line %d is not a JSON object: %v\n%s", i+1, err, line)
		}
		// As terraform-exec's users read it: terraform-json's decoder.
		lm, err := tfjson.UnmarshalLogMessage([]byte(line))
		if err != nil {
			t.Fatalf("apply -json line %d: terraform-json: %v\n%s", i+1, err, line)
		}
		if v, ok := lm.(tfjson.VersionLogMessage); m.Type == "version" && (!ok || v.UI == nil) {
			t.Fatalf("apply -json line %d: terraform-json reads no ui version: %#v", i+1, lm)
		}
		if m.Level == "" || m.Message == "" || m.Module != "sparkform.ui" || m.Type == "" {
			t.Fatalf("apply -json line %d lacks @level, @message, @module or type: %s", i+1, line)
		}
		if _, err := time.Parse(time.RFC3339Nano, m.Timestamp); err != nil {
			t.Fatalf("apply -json line %d: @timestamp: %v", i+1, err)
		}
		msgs = append(msgs, m)
	}
	if len(msgs) == 0 || msgs[0].Type != "version" {
		t.Fatalf("apply -json does not start with a version message:\n%s", stdout)
	}
	var planned, started, completed int
	done := map[string]int{}  // addr -> index of apply_complete
	start := map[string]int{} // addr -> index of apply_start
	var summaries []string
	for i, m := range msgs {
		if m.Hook != nil && !m.Hook.Resource.complete() || m.Change != nil && !m.Change.Resource.complete() {
			t.Errorf("%s %d: a resource object without Terraform's fields: %+v %+v", m.Type, i, m.Hook, m.Change)
		}
		switch m.Type {
		case "planned_change":
			planned++
			if m.Change.Action != "create" || m.Change.Resource.Node == "" {
				t.Errorf("planned_change %d: %+v, want a create on a node", i, m.Change)
			}
		case "apply_start":
			started++
			if _, dup := start[m.Hook.Resource.Addr]; dup {
				t.Errorf("%s started twice", m.Hook.Resource.Addr)
			}
			start[m.Hook.Resource.Addr] = i
		case "apply_complete":
			completed++
			// A container has an id: Terraform's hooks name it.
			if m.Hook.Resource.Type == "docker_container" && (m.Hook.IDKey != "id" || m.Hook.IDValue == "" ||
				!strings.HasSuffix(m.Message, " [id="+m.Hook.IDValue+"]")) {
				t.Errorf("apply_complete of a container without its id: %s %+v", m.Message, m.Hook)
			}
			if _, ok := start[m.Hook.Resource.Addr]; !ok {
				t.Errorf("%s completed without apply_start", m.Hook.Resource.Addr)
			}
			done[m.Hook.Resource.Addr] = i
		case "apply_errored", "diagnostic":
			t.Errorf("apply -json: %s: %s", m.Type, m.Message)
		case "change_summary":
			summaries = append(summaries, fmt.Sprintf("%s %d/%d/%d: %s", m.Changes.Operation, m.Changes.Add, m.Changes.Change, m.Changes.Remove, m.Message))
		}
	}
	if planned != n || started != n || completed != n {
		t.Errorf("apply -json: %d planned, %d started, %d completed; want %d each", planned, started, completed, n)
	}
	if want := []string{fmt.Sprintf("plan %d/0/0: Plan: %d to add, 0 to change, 0 to destroy.", n, n),
		fmt.Sprintf("apply %d/0/0: Apply complete! Resources: %d added, 0 changed, 0 destroyed.", n, n)}; fmt.Sprint(summaries) != fmt.Sprint(want) {
		t.Errorf("change summaries %v, want %v", summaries, want)
	}
	for _, key := range []string{"spark-01", "spark-02"} {
		c := start[`module.dsv41.docker_container.serve["`+key+`"]`]
		for _, dep := range []string{`module.dsv41.kmod_module.display["spark-01"]`, `module.dsv41.kmod_module.display["spark-02"]`,
			`module.dsv41.hubstage_manifest.model["` + key + `"]`, `module.dsv41.hubstage_manifest.draft["` + key + `"]`} {
			if d, ok := done[dep]; !ok || d > c {
				t.Errorf("module.dsv41.docker_container.serve[%q] started (message %d) before %s completed (message %d)", key, c, dep, d)
			}
		}
	}
	last := msgs[len(msgs)-1]
	if last.Type != "outputs" || last.Outputs["model_commit"].Value == nil {
		t.Errorf("apply -json does not end with the outputs (model_commit): %+v", last)
	}
}
