package sdk

import (
	"reflect"
	"slices"
	"testing"
)

// Equal compares every field of Node: a field it skipped would make
// two different nodes one (a change reaching the wrong host).
func TestNodeEqualEveryField(t *testing.T) {
	base := Node{Name: "n", Transport: "ssh", Host: "h", Port: 22, User: "u", IdentityFile: "k",
		IdentityFiles: []string{"a"}, IdentitiesOnly: true, KnownHosts: "kh",
		ProxyJump: []Node{{Name: "j", Transport: "ssh", Host: "jh"}}, Become: true, Timeout: 5}
	b := base
	if !base.Equal(&b) {
		t.Fatal("a node differs from its copy")
	}
	typ := reflect.TypeOf(base)
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		other := base
		other.IdentityFiles = slices.Clone(base.IdentityFiles)
		other.ProxyJump = slices.Clone(base.ProxyJump)
		v := reflect.ValueOf(&other).Elem().Field(i)
		switch v.Kind() {
		case reflect.String:
			v.SetString(v.String() + "x")
		case reflect.Int, reflect.Int64:
			v.SetInt(v.Int() + 1)
		case reflect.Bool:
			v.SetBool(!v.Bool())
		case reflect.Slice:
			if f.Name == "ProxyJump" {
				other.ProxyJump[0].Host = "other"
			} else {
				v.Set(reflect.Append(v, reflect.ValueOf("b")))
			}
		default:
			t.Fatalf("field %s of kind %s: teach Equal and this test about it", f.Name, v.Kind())
		}
		if base.Equal(&other) {
			t.Errorf("nodes differing in %s are equal", f.Name)
		}
	}
}
