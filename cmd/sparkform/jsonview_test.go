package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	tfjson "github.com/hashicorp/terraform-json"
)

// TestValidateJSONDocument: validate -json's document, decoded and
// validated by terraform-json, for a configuration with an error and a
// warning; the snippet highlights the subject inside its context.
func TestValidateJSONDocument(t *testing.T) {
	src := []byte("resource \"x\" \"y\" {\n  path = 42\n}\n")
	f := &hcl.File{Bytes: src}
	subj := hcl.Range{Filename: "main.sf.hcl", Start: hcl.Pos{Line: 2, Column: 10, Byte: 28}, End: hcl.Pos{Line: 2, Column: 12, Byte: 30}}
	ctx := hcl.Range{Filename: "main.sf.hcl", Start: hcl.Pos{Line: 1, Column: 1, Byte: 0}, End: hcl.Pos{Line: 3, Column: 2, Byte: 31}}
	var out bytes.Buffer
	v := &jsonValidate{w: &out}
	v.diagnostics(hcl.Diagnostics{
		{Severity: hcl.DiagError, Summary: "Incorrect attribute value type", Detail: "A string is required.", Subject: &subj, Context: &ctx},
		{Severity: hcl.DiagWarning, Summary: "Deprecated", Subject: &subj},
	}, map[string]*hcl.File{"main.sf.hcl": f})
	v.fail(errors.New("cannot start provider x\nits binary is missing"))
	v.result(false)
	if err := checkValidateJSON(out.Bytes()); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	var doc tfjson.ValidateOutput
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Valid || doc.ErrorCount != 2 || doc.WarningCount != 1 || len(doc.Diagnostics) != 3 {
		t.Fatalf("document %+v", doc)
	}
	sn := doc.Diagnostics[0].Snippet
	if sn == nil || sn.StartLine != 1 || sn.Code != string(src[:len(src)-1]) || sn.Code[sn.HighlightStartOffset:sn.HighlightEndOffset] != "42" {
		t.Errorf("snippet %+v", sn)
	}
	if d := doc.Diagnostics[2]; d.Summary != "cannot start provider x" || d.Detail != "its binary is missing" || d.Range != nil {
		t.Errorf("plain error %+v", d)
	}
	// Valid, with nothing to say: an empty list, not null.
	out.Reset()
	(&jsonValidate{w: &out}).result(true)
	if !strings.Contains(out.String(), `"diagnostics": []`) || checkValidateJSON(out.Bytes()) != nil {
		t.Errorf("valid document:\n%s", out.String())
	}
}
