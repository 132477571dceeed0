package state

import "testing"

func TestTypeOfAddress(t *testing.T) {
	for in, want := range map[string]string{
		`kmod_module.x["a"]`:                             "kmod_module",
		`module.m.kmod_module.x`:                         "kmod_module",
		`module.m["a.b]"].module.n[0].gitkit_checkout.k`: "gitkit_checkout",
		`module.m["q\"].x"].docker_image.i`:              "docker_image",
	} {
		if got := typeOfAddress(in); got != want {
			t.Errorf("typeOfAddress(%s) = %s, want %s", in, got, want)
		}
	}
}
