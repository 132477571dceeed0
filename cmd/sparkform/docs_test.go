package main

import (
	"os"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// TestGettingStartedPlan: docs/getting-started.md shows the plan exactly
// as the script test getting_started_plan sees sparkform print it.
func TestGettingStartedPlan(t *testing.T) {
	a, err := txtar.ParseFile("testdata/script/getting_started_plan.txtar")
	if err != nil {
		t.Fatal(err)
	}
	var want string
	for _, f := range a.Files {
		if f.Name == "want-plan" {
			want = string(f.Data)
		}
	}
	if want == "" {
		t.Fatal("getting_started_plan.txtar has no want-plan")
	}
	doc, err := os.ReadFile("../../docs/getting-started.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```\n"+want+"```\n") {
		t.Errorf("docs/getting-started.md does not show the plan sparkform prints; paste want-plan from testdata/script/getting_started_plan.txtar:\n%s", want)
	}
}
