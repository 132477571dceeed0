package engine

import (
	"context"
	"strings"
	"testing"
)

// TestValidateSharedModuleBodyOnce: a module block refused by its
// provider is reported once, naming its first instance, however many
// instances the module has; a root block's problem is reported as its
// own. Before, each of the 30 instances' copies of the block was decoded
// and sent to the provider, and the refusal came 30 times (one per
// address).
func TestValidateSharedModuleBodyOnce(t *testing.T) {
	b := newBed(t)
	r := b.cfg("validate_module")
	diags := r.e.Validate(context.Background())
	var bad, root int
	for _, d := range diags {
		switch {
		case strings.Contains(d.Summary+d.Detail, `sftest_thing.bad`):
			bad++
			if !strings.Contains(d.Detail, `module.m["k0"].sftest_thing.bad`) {
				t.Errorf("the module block's problem names %q; want its first instance, module.m[\"k0\"]", d.Detail)
			}
		case strings.Contains(d.Summary+d.Detail, `sftest_thing.root`):
			root++
		default:
			t.Errorf("unexpected diagnostic: %s: %s", d.Summary, d.Detail)
		}
	}
	if bad != 1 || root != 1 {
		t.Errorf("%d diagnostics for the module's block, %d for the root's; want 1 and 1:\n%s", bad, root, diagString(diags))
	}
}
