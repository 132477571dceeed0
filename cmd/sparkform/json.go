package main

import (
	"encoding/json"
	"io"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/internal/command/jsonvalue"
)

// jsonValue turns a cty value into plain JSON data; unknowns become null
// and are listed separately, as Terraform's after_unknown does
// (jsonvalue.Value).
func jsonValue(v cty.Value) (any, any) { return jsonvalue.Value(v) }

// pathString is a path as people read it (jsonvalue.PathString).
func pathString(p cty.Path) string { return jsonvalue.PathString(p) }

// jsonRefresh is what the refresh of a plan cost, in the -json stream's
// refresh_summary.
type jsonRefresh struct {
	ReadResourcesCalls int                         `json:"read_resources_calls"`
	RemoteRoundTrips   int                         `json:"remote_round_trips"`
	RPCs               map[string]map[string]int64 `json:"rpcs,omitempty"`
}

// writeJSONDocument writes one indented JSON document (show -json,
// output -json).
func writeJSONDocument(w io.Writer, doc any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
