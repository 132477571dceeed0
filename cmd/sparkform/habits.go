package main

import (
	"bytes"
	"encoding/json"
	"io"
	"runtime"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/rogpeppe/go-internal/diff"

	"github.com/sparkform/sparkform/engine/plans"
	"github.com/sparkform/sparkform/state"
)

// versionJSON is `version -json`: one object, in the manner of
// `terraform version -json`.
func (m *meta) versionJSON() error {
	enc := json.NewEncoder(m.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{
		"sparkform_version": version,
		"platform":          runtime.GOOS + "_" + runtime.GOARCH,
		"go_version":        runtime.Version(),
		"provider_protocol": 1,
		"state_format":      state.FormatVersion,
		"plan_format":       plans.FormatVersion,
		"ui_format":         jsonUIVersion,
		"builtin_providers": builtinProviders(),
	})
}

// fmtStdin is `fmt -`: format stdin to stdout. With -check nothing is
// printed and the exit status is 3 when the input is not formatted; with
// -diff the diff is printed instead of the formatted text.
func (m *meta) fmtStdin(check, showDiff bool) error {
	src, err := io.ReadAll(m.stdin)
	if err != nil {
		return err
	}
	if _, ds := hclwrite.ParseConfig(src, "<stdin>", hcl.InitialPos); ds.HasErrors() {
		m.files = map[string]*hcl.File{"<stdin>": {Bytes: src}}
		m.diags(ds)
		return &exitError{1}
	}
	out := hclwrite.Format(src)
	switch {
	case showDiff:
		m.stdout.Write(diff.Diff("old/<stdin>", src, "new/<stdin>", out))
	case !check:
		m.stdout.Write(out)
	}
	if check && !bytes.Equal(out, src) {
		return &exitError{3}
	}
	return nil
}
