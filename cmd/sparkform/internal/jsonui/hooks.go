package jsonui

import (
	"fmt"
	"slices"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/engine/plans"
)

// Terraform's words for an action in its hooks.
var (
	tfStartVerb = map[plans.Action]string{plans.Create: "Creating", plans.Update: "Modifying", plans.Delete: "Destroying",
		plans.DeleteThenCreate: "Replacing", plans.CreateThenDelete: "Replacing"}
	tfProgressVerb = map[plans.Action]string{plans.Create: "creating", plans.Update: "modifying", plans.Delete: "destroying",
		plans.DeleteThenCreate: "replacing", plans.CreateThenDelete: "replacing"}
	tfNoun = map[plans.Action]string{plans.Create: "Creation", plans.Update: "Modifications", plans.Delete: "Destruction",
		plans.DeleteThenCreate: "Replacement", plans.CreateThenDelete: "Replacement"}
)

// ObjectID is Terraform's id_key and id_value of obj: its "id", else its
// "name", when that is a known string that is not sensitive.
func ObjectID(obj cty.Value, sensitive []string) (key, value string) {
	if obj == cty.NilVal || !obj.IsKnown() || obj.IsNull() || !obj.Type().IsObjectType() || obj.IsMarked() {
		return "", ""
	}
	for _, k := range []string{"id", "name"} {
		if !obj.Type().HasAttribute(k) || slices.Contains(sensitive, k) {
			continue
		}
		if v := obj.GetAttr(k); v.Type() == cty.String && v.IsKnown() && !v.IsNull() && !v.IsMarked() && v.AsString() != "" {
			return k, v.AsString()
		}
	}
	return "", ""
}

func idSuffix(key, value string) string {
	if key == "" {
		return ""
	}
	return fmt.Sprintf(" [%s=%s]", key, value)
}

// ApplyStartText is apply_start's @message: "addr: Creating... [id=X]".
func ApplyStartText(addr string, a plans.Action, idKey, idValue string) string {
	return fmt.Sprintf("%s: %s...%s", addr, tfStartVerb[a], idSuffix(idKey, idValue))
}

// ApplyProgressText is apply_progress's: "addr: Still creating... [10s elapsed]".
func ApplyProgressText(addr string, a plans.Action, elapsed time.Duration) string {
	return fmt.Sprintf("%s: Still %s... [%s elapsed]", addr, tfProgressVerb[a], elapsed)
}

// ApplyCompleteText is apply_complete's: "addr: Creation complete after 3s [id=X]".
func ApplyCompleteText(addr string, a plans.Action, elapsed time.Duration, idKey, idValue string) string {
	return fmt.Sprintf("%s: %s complete after %s%s", addr, tfNoun[a], elapsed, idSuffix(idKey, idValue))
}

// ApplyErroredText is apply_errored's: "addr: Creation errored after 3s".
func ApplyErroredText(addr string, a plans.Action, elapsed time.Duration) string {
	return fmt.Sprintf("%s: %s errored after %s", addr, tfNoun[a], elapsed)
}

// Elapsed is how long an operation has run, in Terraform's whole seconds.
func Elapsed(took time.Duration) time.Duration { return took.Round(time.Second) }

// RefreshStartText is refresh_start's @message: "addr: Refreshing state... [id=X]".
func RefreshStartText(addr, idKey, idValue string) string {
	return fmt.Sprintf("%s: Refreshing state...%s", addr, idSuffix(idKey, idValue))
}

// RefreshCompleteText is refresh_complete's: "addr: Refresh complete [id=X]".
func RefreshCompleteText(addr, idKey, idValue string) string {
	return fmt.Sprintf("%s: Refresh complete%s", addr, idSuffix(idKey, idValue))
}

// RefreshHook is the hook of refresh_start and refresh_complete: the
// resource, and id_key and id_value when the object has one.
func RefreshHook(addr, idKey, idValue string) map[string]any {
	h := map[string]any{"resource": Resource(addr, "", "")}
	if idKey != "" {
		h["id_key"], h["id_value"] = idKey, idValue
	}
	return h
}
