package jsonui

import (
	"strings"

	"github.com/sparkform/sparkform/engine/addrs"
	"github.com/sparkform/sparkform/engine/plans"
)

// ResourceObject is Terraform's "resource" object, and the node the
// instance lives on ("node", sparkform's). Its fields are in the order
// of their names, as a map's would be.
type ResourceObject struct {
	Addr            string `json:"addr"`
	ImpliedProvider string `json:"implied_provider"`
	Module          string `json:"module"`
	Node            string `json:"node,omitempty"`
	Resource        string `json:"resource"`
	ResourceKey     any    `json:"resource_key"`
	ResourceName    string `json:"resource_name"`
	ResourceType    string `json:"resource_type"`
}

// Resource describes an instance address as Terraform's "resource"
// object does (implied_provider: the provider, or as Terraform implies
// it, the type's name up to its first "_"), plus the node it lives on.
func Resource(addr, provider, node string) *ResourceObject {
	out := &ResourceObject{Addr: addr, Resource: addr, ImpliedProvider: provider, Node: node}
	if ri, ds := addrs.ParseResourceInstance(addr); !ds.HasErrors() {
		out.ResourceType, out.ResourceName = ri.Resource.Type, ri.Resource.Name
		if mod := ri.Resource.Module; mod != "" {
			out.Module, out.Resource = mod, strings.TrimPrefix(addr, mod+".")
		}
		switch k := ri.Key.(type) {
		case addrs.StringKey:
			out.ResourceKey = string(k)
		case addrs.IntKey:
			out.ResourceKey = int(k)
		}
		if provider == "" {
			out.ImpliedProvider, _, _ = strings.Cut(ri.Resource.Type, "_")
		}
	}
	return out
}

// Action is Terraform's name for a planned action.
func Action(a plans.Action) string {
	switch a {
	case plans.DeleteThenCreate, plans.CreateThenDelete:
		return "replace"
	case plans.NoOp:
		return "noop"
	}
	return string(a)
}

// PlanVerb is the text of a planned_change per action.
var PlanVerb = map[plans.Action]string{
	plans.Create: "Plan to create", plans.Update: "Plan to update", plans.Delete: "Plan to delete",
	plans.DeleteThenCreate: "Plan to replace", plans.CreateThenDelete: "Plan to replace",
}

// Reason is Terraform's "reason" for c, where one of Terraform's
// reasons says it ("" where none does: c.Reason, sparkform's own words,
// is in "reason_detail" either way).
func Reason(c *plans.ResourceChange) string {
	r := c.Reason
	switch {
	case strings.HasPrefix(r, "tainted"):
		return "tainted"
	case strings.HasPrefix(r, "replacement requested"):
		return "requested"
	case r == "no longer in the configuration":
		return "delete_because_no_resource_config"
	case strings.HasPrefix(r, "its key is no longer produced"):
		ri, ds := addrs.ParseResourceInstance(c.Addr)
		if ds.HasErrors() {
			return ""
		}
		switch ri.Key.(type) {
		case addrs.StringKey:
			return "delete_because_each_key"
		case addrs.IntKey:
			return "delete_because_count_index"
		}
		return "delete_because_wrong_repetition"
	case r == "" && (c.Action == plans.DeleteThenCreate || c.Action == plans.CreateThenDelete) && len(c.RequiresReplace) > 0:
		return "cannot_update"
	}
	return ""
}
