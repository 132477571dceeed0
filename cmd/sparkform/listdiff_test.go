package main

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

func strs(ss ...string) cty.Value {
	if len(ss) == 0 {
		return cty.ListValEmpty(cty.String)
	}
	vs := make([]cty.Value, len(ss))
	for i, s := range ss {
		vs[i] = cty.StringVal(s)
	}
	return cty.ListVal(vs)
}

func file(src, dst string) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{"source": cty.StringVal(src), "target": cty.StringVal(dst)})
}

// opsOf renders edits as "=a -b +c ~d" for comparison.
func opsOf(es []listEdit) string {
	var parts []string
	for _, e := range es {
		v := e.after
		if e.op == '-' {
			v = e.before
		}
		s := v.GoString()
		if v.Type() == cty.String {
			s = v.AsString()
		} else if v.Type().IsObjectType() {
			s = v.GetAttr("target").AsString()
		}
		parts = append(parts, string(e.op)+s)
	}
	return strings.Join(parts, " ")
}

func TestListEdits(t *testing.T) {
	for _, tc := range []struct {
		name string
		b, a cty.Value
		want string
	}{
		{"same", strs("a", "b"), strs("a", "b"), "=a =b"},
		{"insert in the middle", strs("a", "b", "c"), strs("a", "x", "b", "c"), "=a +x =b =c"},
		{"remove", strs("a", "b", "c"), strs("a", "c"), "=a -b =c"},
		{"replace a string", strs("a", "b", "c"), strs("a", "B", "c"), "=a -b +B =c"},
		{"reorder keeps the longest common run", strs("a", "b", "c", "d"), strs("b", "c", "d", "a"), "-a =b =c =d +a"},
		{"from empty", strs(), strs("a"), "+a"},
		{"to empty", strs("a"), strs(), "-a"},
		{"duplicates", strs("a", "a", "b"), strs("a", "b", "b"), "=a -a +b =b"},
		{"an object changed in place is ~",
			cty.ListVal([]cty.Value{file("s1", "/m/a"), file("s2", "/m/b")}),
			cty.ListVal([]cty.Value{file("s1", "/m/a"), file("s2x", "/m/b"), file("s3", "/m/c")}),
			"=/m/a ~/m/b +/m/c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := opsOf(listEdits(tc.b, tc.a)); got != tc.want {
				t.Errorf("listEdits = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestListEditsLarge: a 10,000-element list with one change costs one
// edit, not a rewrite, and beyond 65,535 distinct elements the rune
// mapping still holds (surrogates skipped).
func TestListEditsLarge(t *testing.T) {
	var b, a []string
	for i := 0; i < 70000; i++ {
		s := strings.Repeat("x", i%7) + string(rune('a'+i%26)) + itoa(i)
		b = append(b, s)
		if i == 60000 {
			a = append(a, "inserted")
		}
		a = append(a, s)
	}
	es := listEdits(strs(b...), strs(a...))
	changed := 0
	for _, e := range es {
		if e.op != '=' {
			changed++
			if e.op != '+' || e.after.AsString() != "inserted" {
				t.Fatalf("unexpected edit %c %#v", e.op, e.after)
			}
		}
	}
	if changed != 1 || len(es) != 70001 {
		t.Errorf("got %d changes in %d edits, want 1 in 70001", changed, len(es))
	}
}

func itoa(i int) string {
	const d = "0123456789"
	if i == 0 {
		return "0"
	}
	var s []byte
	for ; i > 0; i /= 10 {
		s = append([]byte{d[i%10]}, s...)
	}
	return string(s)
}
