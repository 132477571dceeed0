package engine

import "testing"

func TestAddressUnder(t *testing.T) {
	for _, c := range []struct {
		addr, target string
		want         bool
	}{
		{`docker_container.serve["a"]`, `docker_container.serve["a"]`, true},
		{`docker_container.serve["a"]`, `docker_container.serve`, true},
		{`docker_container.serve`, `docker_container.serve`, true},
		{`docker_container.server`, `docker_container.serve`, false},
		{`docker_container.serve["ab"]`, `docker_container.serve["a"]`, false},
		{`module.recipe.docker_container.serve["a"]`, `module.recipe`, true},
		{`module.recipe["x"].docker_container.serve["a"]`, `module.recipe`, true},
		{`module.recipe["x"].docker_container.serve["a"]`, `module.recipe["x"]`, true},
		{`module.recipe["y"].docker_container.serve["a"]`, `module.recipe["x"]`, false},
		{`module.recipe2.docker_container.serve`, `module.recipe`, false},
		{`module.recipe.module.ray.docker_container.head`, `module.recipe`, true},
		{`docker_container.serve`, ``, false},
	} {
		if got := addressUnder(c.addr, c.target); got != c.want {
			t.Errorf("addressUnder(%s, %s) = %v; want %v", c.addr, c.target, got, c.want)
		}
	}
}

func TestRelativeAddr(t *testing.T) {
	for _, c := range []struct{ addr, target, want string }{
		{`module.recipe.docker_container.serve["a"]`, `module.recipe`, `docker_container.serve["a"]`},
		{`module.recipe["x"].docker_container.ray_head["a"]`, `module.recipe`, `docker_container.ray_head["a"]`},
		{`module.recipe["x"].docker_container.ray_head["a"]`, `module.recipe["x"]`, `docker_container.ray_head["a"]`},
		{`docker_container.serve["a"]`, `docker_container.serve`, `docker_container.serve["a"]`},
	} {
		if got := relativeAddr(c.addr, c.target); got != c.want {
			t.Errorf("relativeAddr(%s, %s) = %s; want %s", c.addr, c.target, got, c.want)
		}
	}
}

func TestShortNodeNames(t *testing.T) {
	got := shortNodeNames([]string{`node.spark["spark-01"]`, `node.spark["spark-02"]`, `node.head`, ``, `node.a["x"]`, `node.b["x"]`})
	want := map[string]string{
		`node.spark["spark-01"]`: "spark-01", `node.spark["spark-02"]`: "spark-02", `node.head`: "head", ``: "(no node)",
		// Two nodes with one key keep their full names.
		`node.a["x"]`: `node.a["x"]`, `node.b["x"]`: `node.b["x"]`,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("label of %q = %q; want %q", k, got[k], v)
		}
	}
}
