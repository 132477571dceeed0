package engine

import (
	"sync"

	"github.com/zclconf/go-cty/cty"
)

// typeShare makes the object values a run keeps share their types. cty
// gives every object value a type of its own (cty.ObjectVal builds a map
// of attribute types: ~300 B for a few attributes, as much as the values
// themselves), though a run keeps thousands of values of one type: a
// plan's changes, an apply's results, the state a plan reads. cty gives a
// value taken out of a list the list's element type (Value.Index), so
// share puts v in a list behind the first value of its type it saw and
// takes it out again: the same value, its type that one's. No copy is
// made; the list is garbage at once.
//
// Values are grouped by resource type, which has at most maxSharedTypes
// distinct value types kept (attributes a schema leaves dynamic make
// more than one). Safe for concurrent use; the zero value is ready.
type typeShare struct {
	mu    sync.Mutex
	kinds map[string][]cty.Value
}

const maxSharedTypes = 8

var secondElement = cty.NumberIntVal(1)

// share returns v with the type of the first value of kind with an equal
// type; v itself when it is the first, not an object, or marked.
func (t *typeShare) share(kind string, v cty.Value) cty.Value {
	if v == cty.NilVal || v.IsMarked() || !v.Type().IsObjectType() {
		return v
	}
	ty := v.Type()
	t.mu.Lock()
	seen := t.kinds[kind]
	var first cty.Value
	for _, s := range seen {
		if s.Type().Equals(ty) {
			first = s
			break
		}
	}
	if first == cty.NilVal {
		if len(seen) < maxSharedTypes {
			if t.kinds == nil {
				t.kinds = map[string][]cty.Value{}
			}
			t.kinds[kind] = append(seen, v)
		}
		t.mu.Unlock()
		return v
	}
	t.mu.Unlock()
	return cty.ListVal([]cty.Value{first, v}).Index(secondElement)
}
