// This file holds logs: the output of the instances an address names (one
// instance, every instance of a resource, or everything in a module
// instance, such as every rank of a recipe), streamed from their providers
// (sdk.LogStreamer) with each line labelled by its node.

package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/sparkform/sparkform/providers/sdk"
)

// LogsOptions are the knobs of one logs call.
type LogsOptions struct {
	// Follow streams new lines until ctx ends.
	Follow bool
	// Tail is how many of the last lines of each instance come first;
	// negative: all.
	Tail int
	// Since, when not zero, skips lines written before it.
	Since time.Time
}

// LogLine is one line of an instance's output.
type LogLine struct {
	sdk.LogLine
	// Addr is the instance it came from.
	Addr string
	// Node is the node's address in config.
	Node string
	// Prefix is what to show before the line: the node's short label, and
	// the instance's address when the node has several of them.
	Prefix string
}

// Logs streams the output of every instance in state that target names
// and whose type serves logs (sdk.ResourceSchema.Logs), all of them at
// once, calling emit (serialised) for each line. target is an instance
// address, a resource address (every instance), or a module instance
// (`module.spark` or `module.spark["a"]`: every instance in it). A
// target that names nothing in state, or only things with no logs (no
// container), is an error that says so, and nothing is streamed.
func (e *Engine) Logs(ctx context.Context, target string, opts LogsOptions, emit func(LogLine)) hcl.Diagnostics {
	objs, diags := e.loadState()
	if diags.HasErrors() {
		return diags
	}
	target = strings.TrimSpace(target)
	var matched []*stateObject
	for addr, in := range objs {
		if strings.HasSuffix(addr, deposedSuffix) || !addressUnder(addr, target) {
			continue
		}
		matched = append(matched, in)
	}
	if len(matched) == 0 {
		return hcl.Diagnostics{errDiag("No such instance",
			fmt.Sprintf("nothing in state matches %q. Give an instance address (docker_container.serve[\"spark-01\"]), a resource (docker_container.serve) or a module instance (module.recipe); `sparkform state list` shows what state has", target))}
	}
	sort.Slice(matched, func(i, j int) bool { return matched[i].Addr < matched[j].Addr })
	var withLogs []*stateObject
	types := map[string]bool{}
	for _, in := range matched {
		rs, err := e.schemaFor(ctx, in.Type)
		if err != nil {
			return hcl.Diagnostics{cannotStart(in.Provider, err)}
		}
		if rs.Logs {
			withLogs = append(withLogs, in)
		} else {
			types[in.Type] = true
		}
	}
	if len(withLogs) == 0 {
		var ts []string
		for t := range types {
			ts = append(ts, t)
		}
		sort.Strings(ts)
		return hcl.Diagnostics{errDiag("No container",
			fmt.Sprintf("%q has no container, so it has no logs: it names %d instance(s) of %s. Give the address of a docker_container, or of a module instance that has one", target, len(matched), strings.Join(ts, ", ")))}
	}

	nodes := make([]string, 0, len(withLogs))
	perNode := map[string]int{}
	for _, in := range withLogs {
		if perNode[in.Node.Name] == 0 {
			nodes = append(nodes, in.Node.Name)
		}
		perNode[in.Node.Name]++
	}
	labels := shortNodeNames(nodes)

	var mu sync.Mutex
	var wg sync.WaitGroup
	var out hcl.Diagnostics
	for _, in := range withLogs {
		prefix := labels[in.Node.Name]
		if perNode[in.Node.Name] > 1 {
			prefix += " " + relativeAddr(in.Addr, target)
		}
		// A sensitive value the container prints (its env, a token in its
		// arguments) is not printed again here.
		secrets := secretStrings(in.SensitiveAttrs, in.Value)
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := e.providers.Provider(ctx, in.Provider)
			var ds sdk.Diagnostics
			if err != nil {
				ds = sdk.Diagnostics{sdk.FromError("Cannot start provider "+in.Provider, err)}
			} else if ls, ok := p.(sdk.LogStreamer); !ok {
				ds = sdk.Diagnostics{sdk.Errorf(nil, "No logs", "provider %s serves no logs (%v)", in.Provider, sdk.ErrNoLogs)}
			} else {
				ds = ls.Logs(ctx, sdk.LogsRequest{TypeName: in.Type, Address: in.Addr, Node: in.Node, State: in.Value,
					Private: in.Private, Follow: opts.Follow, Tail: opts.Tail, Since: opts.Since}, func(l sdk.LogLine) error {
					if len(secrets) > 0 {
						l.Text = redactString(l.Text, secrets)
					}
					mu.Lock()
					defer mu.Unlock()
					emit(LogLine{LogLine: l, Addr: in.Addr, Node: in.Node.Name, Prefix: prefix})
					return nil
				})
			}
			if len(ds) > 0 {
				hd := sdkDiags(ds, in.Addr, nil, nil)
				mu.Lock()
				out = append(out, redact(hd, secrets)...)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}

// addressUnder says whether addr is target or inside it: an instance of
// the resource target, or in the module instance target.
func addressUnder(addr, target string) bool {
	if target == "" {
		return false
	}
	if addr == target {
		return true
	}
	rest, ok := strings.CutPrefix(addr, target)
	if !ok || rest == "" {
		return false
	}
	// '.': inside a module instance; '[': an instance of a resource or
	// module that target names without a key.
	return rest[0] == '.' || rest[0] == '[' && !strings.HasSuffix(target, "]")
}

// relativeAddr is addr without the module part target names, for a short
// prefix: module.recipe.docker_container.serve["a"] -> docker_container.serve["a"].
func relativeAddr(addr, target string) string {
	if strings.HasPrefix(target, "module.") {
		if rest, ok := strings.CutPrefix(addr, target); ok && strings.HasPrefix(rest, ".") {
			return rest[1:]
		}
		if rest, ok := strings.CutPrefix(addr, target+"["); ok {
			if i := strings.Index(rest, "]."); i >= 0 {
				return rest[i+2:]
			}
		}
	}
	return addr
}
