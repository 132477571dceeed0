// Command testplugin is the provider plugin the plugin host's tests start
// as a real process. It serves a provider chosen by name, either as a
// built-in (`testplugin internal-plugin NAME`) or as an external plugin
// (installed as `sparkform-provider-NAME`):
//
//	sparkform  the real built-in provider (providers/builtin)
//	crashy     crashy_thing: apply reports progress, then panics
//	slow       slow_thing: apply blocks until its ctx is cancelled (one
//	           named "quick" returns at once)
//	batch      batch_thing: apply takes 20ms and fails for a name starting
//	           with "fail"; validate fails for the name "invalid" and notes
//	           each call ("validate NAME")
//	oldproto   the built-in provider behind protocol version 1's handshake
//	broken     exits at start with a message on stderr
//
// Given several names (`testplugin internal-plugin NAME NAME...`) it serves
// them all from one process (sdk.ServeShared), as sparkform serves its
// built-ins.
//
// When TESTPLUGIN_LOG is set, each start appends the provider name to it
// (the names joined by "+" for a shared process),
// so tests can see which plugins were started, and slow_thing notes there
// that its apply saw the cancellation.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/builtin"
	"github.com/sparkform/sparkform/providers/sdk"
)

func main() {
	name := strings.TrimPrefix(filepath.Base(os.Args[0]), "sparkform-provider-")
	if len(os.Args) > 3 && os.Args[1] == "internal-plugin" {
		// Several built-ins: one process serves them all.
		names := os.Args[2:]
		note(strings.Join(names, "+"))
		ps := map[string]sdk.Provider{}
		for _, n := range names {
			if ps[n] = provider(n); ps[n] == nil {
				fmt.Fprintf(os.Stderr, "testplugin: unknown provider %q\n", n)
				os.Exit(2)
			}
		}
		sdk.ServeShared(ps)
		return
	}
	if len(os.Args) == 3 && os.Args[1] == "internal-plugin" {
		name = os.Args[2]
	}
	note(name)
	switch name {
	case "oldproto":
		old := sdk.Handshake
		old.ProtocolVersion = 1
		goplugin.Serve(&goplugin.ServeConfig{
			HandshakeConfig: old,
			Plugins:         goplugin.PluginSet{sdk.PluginName: &sdk.GRPCProviderPlugin{Impl: builtin.New()}},
			GRPCServer:      sdk.NewGRPCServerWithLimits,
		})
	case "broken":
		fmt.Fprintln(os.Stderr, "broken: cannot start: /etc/broken.conf is missing")
		os.Exit(3)
	default:
		p := provider(name)
		if p == nil {
			fmt.Fprintf(os.Stderr, "testplugin: unknown provider %q\n", name)
			os.Exit(2)
		}
		sdk.Serve(p)
	}
}

// provider is the provider called name, or nil.
func provider(name string) sdk.Provider {
	switch name {
	case "sparkform":
		return builtin.New()
	case "crashy":
		return &sdk.Router{Name: name, Resources: map[string]sdk.Resource{"crashy_thing": crashy{}}}
	case "slow":
		return &sdk.Router{Name: name, Resources: map[string]sdk.Resource{"slow_thing": slow{}}}
	case "batch":
		return &sdk.Router{Name: name, Resources: map[string]sdk.Resource{"batch_thing": batch{}}}
	}
	return nil
}

// note appends word to $TESTPLUGIN_LOG, if set.
func note(word string) {
	if log := os.Getenv("TESTPLUGIN_LOG"); log != "" {
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, word)
			f.Close()
		}
	}
}

var thingSchema = &sdk.ResourceSchema{Block: &sdk.Block{Attributes: map[string]*sdk.Attribute{
	"name": {Type: cty.String, Required: true},
	"id":   {Type: cty.String, Computed: true},
}}}

type base struct{}

func (base) Schema() *sdk.ResourceSchema                         { return thingSchema }
func (base) Validate(context.Context, cty.Value) sdk.Diagnostics { return nil }
func (base) Read(_ context.Context, _ sdk.Node, items []sdk.ReadItem) ([]sdk.ReadResult, int, sdk.Diagnostics) {
	out := make([]sdk.ReadResult, len(items))
	for i, it := range items {
		out[i] = sdk.ReadResult{NewState: it.Prior}
	}
	return out, 0, nil
}
func (base) Plan(_ context.Context, req sdk.PlanRequest) sdk.PlanResponse {
	return sdk.DefaultPlan(thingSchema, req)
}
func (base) Import(_ context.Context, req sdk.ImportRequest) sdk.ImportResponse {
	return sdk.ImportUnsupported(req.TypeName)
}

type crashy struct{ base }

func (crashy) Apply(_ context.Context, req sdk.ApplyRequest, progress func(sdk.Progress)) sdk.ApplyResponse {
	progress(sdk.Progress{Message: "about to crash"})
	// Give the progress event time to reach the engine before dying.
	time.Sleep(100 * time.Millisecond)
	panic("crashy: boom while applying " + req.Address)
}

type slow struct{ base }

func (slow) Apply(ctx context.Context, req sdk.ApplyRequest, progress func(sdk.Progress)) sdk.ApplyResponse {
	if req.Planned.GetAttr("name").AsString() == "quick" {
		return sdk.ApplyResponse{NewState: withID(req.Planned)}
	}
	note(fmt.Sprintf("slow-pid %d", os.Getpid()))
	progress(sdk.Progress{Message: "started"})
	select {
	case <-ctx.Done():
		note("slow-saw-" + context.Cause(ctx).Error())
		return sdk.ApplyResponse{NewState: req.Prior, Diagnostics: sdk.Diagnostics{sdk.FromError("Interrupted", ctx.Err())}}
	case <-time.After(time.Minute):
		return sdk.ApplyResponse{NewState: req.Planned}
	}
}

func withID(v cty.Value) cty.Value {
	m := v.AsValueMap()
	m["id"] = cty.StringVal("id-" + m["name"].AsString())
	return cty.ObjectVal(m)
}

type batch struct{ base }

func (batch) Validate(_ context.Context, cfg cty.Value) sdk.Diagnostics {
	name := cfg.GetAttr("name")
	if !name.IsKnown() || name.IsNull() {
		return nil
	}
	note("validate " + name.AsString())
	if name.AsString() == "invalid" {
		return sdk.Diagnostics{sdk.Errorf(cty.GetAttrPath("name"), "Invalid name", "the name %q is refused", name.AsString())}
	}
	return nil
}

func (batch) Apply(_ context.Context, req sdk.ApplyRequest, progress func(sdk.Progress)) sdk.ApplyResponse {
	progress(sdk.Progress{Message: "working"})
	time.Sleep(20 * time.Millisecond)
	if req.Planned.IsNull() {
		return sdk.ApplyResponse{NewState: req.Planned}
	}
	name := req.Planned.GetAttr("name").AsString()
	if strings.HasPrefix(name, "fail") {
		return sdk.ApplyResponse{NewState: req.Prior, Diagnostics: sdk.Diagnostics{sdk.Errorf(nil, "Refused", "%s: names starting with fail fail", req.Address)}}
	}
	return sdk.ApplyResponse{NewState: withID(req.Planned)}
}
