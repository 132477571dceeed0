package main

import (
	"context"
	"fmt"

	"github.com/sparkform/sparkform/engine/plugin"
)

func main() {
	h := plugin.NewHost(plugin.Options{SelfExe: "/tmp/sf", Builtins: []string{"sparkform", "gitkit"}})
	defer h.Close()
	for _, n := range []string{"sparkform", "gitkit"} {
		s, err := h.Schema(context.Background(), n)
		if err != nil {
			fmt.Println(n, err)
			continue
		}
		for t := range s.ResourceTypes {
			fmt.Println(n, t)
		}
	}
	fmt.Println(h.Stats())
}
