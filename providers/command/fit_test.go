package command_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/sparkform/sparkform/providers/command"
	"github.com/sparkform/sparkform/providers/sdk"
	"github.com/sparkform/sparkform/providers/sdk/sdktest"
)

const fitTyp = command.TypeMemoryFit

// standInSMI writes a STAND-IN for nvidia-smi into dir (this machine has
// no NVIDIA GPU): it answers the query node_memory_fit makes with the
// lines in the file figures beside it (so a test sets them without the
// environment, which a node's command does not see) and counts its calls
// in the file calls. It returns the script's path.
func standInSMI(t *testing.T, dir, figures string) string {
	t.Helper()
	d := filepath.Join(dir, "standin-nvidia-smi")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	script := `#!/bin/sh
# STAND-IN for nvidia-smi (tests only): prints figures for
# --query-gpu=memory.total,memory.free --format=csv,noheader,nounits.
here=$(dirname "$0")
echo "$*" >> "$here/calls"
case "$*" in
  *--query-gpu=memory.total,memory.free*) cat "$here/figures" ;;
  *) echo "stand-in nvidia-smi: unexpected arguments: $*" >&2; exit 2 ;;
esac
`
	for name, body := range map[string]string{"nvidia-smi": script, "figures": figures, "calls": ""} {
		p := filepath.Join(d, name)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o777); err != nil { // the sshd user appends to calls
			t.Fatal(err)
		}
	}
	return filepath.Join(d, "nvidia-smi")
}

func smiCalls(t *testing.T, smi string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(filepath.Dir(smi), "calls"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// meminfo is this machine's MemTotal in bytes: the nodes of the test bed
// share its kernel.
func meminfoTotal(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n << 10
		}
	}
	t.Fatal("no MemTotal in /proc/meminfo")
	return 0
}

func fitConfig(t *testing.T, p sdk.Provider, attrs map[string]cty.Value) cty.Value {
	return sdktest.Object(t, sdktest.Schema(t, p, fitTyp).Block, attrs)
}

func planFit(p sdk.Provider, n sdk.Node, prior, config cty.Value) sdk.PlanResponse {
	rs := p.(*sdk.Router).Resources[fitTyp].Schema()
	if prior == cty.NilVal {
		prior = cty.NullVal(rs.Block.ImpliedType())
	}
	return p.PlanResourceChange(context.Background(), sdk.PlanRequest{TypeName: fitTyp, Address: fitTyp + ".serve[\"spark-01\"]", Node: n,
		Prior: prior, Config: config, Proposed: sdk.ProposedNew(rs.Block, prior, config)})
}

func diagText(ds sdk.Diagnostics) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.Summary + ": " + d.Detail + "\n")
	}
	return b.String()
}

// TestMemoryFitOnNodes: node_memory_fit at plan on the local node and a
// real sshd node, with a stand-in nvidia-smi (named so: this machine has
// no GPU) and with /proc/meminfo: a recipe that fits plans with its
// budget; one that does not is refused with the numbers, before anything
// (the stand-in's calls show the node was asked once); the display
// unlock's reserve can make the difference; an override needs a reason;
// a second plan with the same arguments asks the node nothing.
func TestMemoryFitOnNodes(t *testing.T) {
	total := meminfoTotal(t)
	for _, n := range testNodes(t) {
		t.Run(n.name, func(t *testing.T) {
			p := command.New()
			// A 128 GiB node with 117 GiB free, as nvidia-smi reports in MiB.
			smi := standInSMI(t, n.dir, "131072, 119808\n")
			gb10 := standInSMI(t, filepath.Join(n.dir, "gb10"), "[N/A], [N/A]\n") // unified memory: no figures
			absent := filepath.Join(n.dir, "no-such-nvidia-smi")
			for _, tc := range []struct {
				name  string
				attrs map[string]cty.Value
				fits  bool
				words []string // in the budget (fits) or the error
			}{
				{"nvidia-smi, fits with the display reserve", map[string]cty.Value{
					"nvidia_smi": cty.StringVal(smi), "gpu_memory_utilization": cty.NumberFloatVal(0.85), "memory": cty.StringVal("9g"),
					"display_reserve": cty.StringVal("2g"), "model_bytes": cty.NumberIntVal(60 << 30),
				}, true, []string{"asks 117.8 GiB = 108.8 GiB (gpu_memory_utilization 0.85 of 128.0 GiB) + 9.0 GiB (the container's memory limit)",
					"of 119.0 GiB available (117.0 GiB + 2.0 GiB the display unlock frees)", "from nvidia-smi", "fits, 1.2 GiB to spare"}},
				{"two containers (Ray's rank 0: head and server) count twice", map[string]cty.Value{
					"nvidia_smi": cty.StringVal(smi), "gpu_memory_utilization": cty.NumberFloatVal(0.80), "memory": cty.StringVal("9g"),
					"display_reserve": cty.StringVal("2g"), "containers": cty.NumberIntVal(2),
				}, false, []string{"asks 120.4 GiB = 102.4 GiB (gpu_memory_utilization 0.8 of 128.0 GiB) + 18.0 GiB (2 containers' memory limit)", "1.4 GiB short"}},
				{"one container with the same figures fits", map[string]cty.Value{
					"nvidia_smi": cty.StringVal(smi), "gpu_memory_utilization": cty.NumberFloatVal(0.80), "memory": cty.StringVal("9g"),
					"display_reserve": cty.StringVal("2g"), "containers": cty.NumberIntVal(1),
				}, true, []string{"+ 9.0 GiB (the container's memory limit)"}},
				{"nvidia-smi, short without the display reserve", map[string]cty.Value{
					"nvidia_smi": cty.StringVal(smi), "gpu_memory_utilization": cty.NumberFloatVal(0.85), "memory": cty.StringVal("9g"),
				}, false, []string{"does not fit", "asks 117.8 GiB", "of 117.0 GiB available", "0.8 GiB short", "Nothing was changed", "override_reason"}},
				{"weights larger than the GPU share", map[string]cty.Value{
					"nvidia_smi": cty.StringVal(smi), "gpu_memory_utilization": cty.NumberFloatVal(0.5), "model_bytes": cty.NumberIntVal(70 << 30),
				}, false, []string{"the weights on this node (70.0 GiB) do not fit in the GPU share (64.0 GiB)"}},
				{"nvidia-smi without memory figures: /proc/meminfo", map[string]cty.Value{
					"nvidia_smi": cty.StringVal(gb10), "model_bytes": cty.NumberIntVal(1 << 30), "shm_size": cty.StringVal("1g"),
				}, true, []string{"asks 2.0 GiB = 1.0 GiB (the model's weights on this node) + 1.0 GiB (the container's shm)",
					"from /proc/meminfo (nvidia-smi gave no memory figures: [N/A], [N/A])", "total " + strconv.FormatFloat(float64(total)/(1<<30), 'f', 1, 64) + " GiB"}},
				{"no nvidia-smi: /proc/meminfo, does not fit", map[string]cty.Value{
					"nvidia_smi": cty.StringVal(absent), "model_bytes": cty.NumberIntVal(total * 2),
				}, false, []string{"does not fit", "from /proc/meminfo:", "(the model's weights on this node) of "}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					before := smiCalls(t, smi)
					resp := planFit(p, n.node, cty.NilVal, fitConfig(t, p, tc.attrs))
					if !tc.fits {
						err := resp.Diagnostics.Err()
						if err == nil {
							t.Fatalf("plan accepted it: %#v", resp.Planned)
						}
						for _, w := range tc.words {
							if !strings.Contains(err.Error(), w) {
								t.Errorf("error does not say %q:\n%v", w, err)
							}
						}
						// With a reason, the same plan goes through with a warning.
						attrs := map[string]cty.Value{"override_reason": cty.StringVal("KV cache from the display pool")}
						for k, v := range tc.attrs {
							attrs[k] = v
						}
						over := planFit(p, n.node, cty.NilVal, fitConfig(t, p, attrs))
						if over.Diagnostics.HasErrors() || !strings.Contains(diagText(over.Diagnostics), `override_reason = "KV cache from the display pool"`) {
							t.Errorf("override with a reason: %s", diagText(over.Diagnostics))
						}
						if b := over.Planned.GetAttr("budget"); !strings.Contains(b.AsString(), "not fit") {
							t.Errorf("overridden budget = %q", b.AsString())
						}
						return
					}
					if resp.Diagnostics.HasErrors() {
						t.Fatal(resp.Diagnostics.Err())
					}
					budget := resp.Planned.GetAttr("budget").AsString()
					for _, w := range tc.words {
						if !strings.Contains(budget, w) {
							t.Errorf("budget does not say %q:\n%s", w, budget)
						}
					}
					if strings.Contains(tc.name, "nvidia-smi, fits") {
						if got := smiCalls(t, smi) - before; got != 1 {
							t.Errorf("the stand-in nvidia-smi ran %d times for one plan, want 1", got)
						}
						if v, _ := resp.Planned.GetAttr("total_bytes").AsBigFloat().Int64(); v != 128<<30 {
							t.Errorf("total_bytes = %d, want 128 GiB", v)
						}
					}
					// Applied, read and planned again with the same arguments:
					// no change, and the node is not asked again.
					config := fitConfig(t, p, tc.attrs)
					applied, _ := sdktest.Apply(t, p, fitTyp, n.node, cty.NullVal(resp.Planned.Type()), resp.Planned, config, nil)
					read := sdktest.Read(t, p, fitTyp, n.node, applied.NewState, nil)
					mid := smiCalls(t, smi)
					again := planFit(p, n.node, read.NewState, config)
					if again.Diagnostics.HasErrors() || !again.Planned.RawEquals(read.NewState) {
						t.Errorf("second plan: %v\n%#v", again.Diagnostics.Err(), again.Planned)
					}
					if got := smiCalls(t, smi) - mid; got != 0 {
						t.Errorf("a second plan with the same arguments ran nvidia-smi %d times", got)
					}
					sdktest.Destroy(t, p, fitTyp, n.node, read.NewState, nil)
				})
			}

			t.Run("planned again at apply", func(t *testing.T) {
				// The engine plans again at apply and compares with the
				// reviewed plan: free memory that moved a little is no
				// change (available_bytes and budget are volatile); memory
				// that no longer fits is refused with the new numbers.
				figures := filepath.Join(filepath.Dir(smi), "figures")
				t.Cleanup(func() { os.WriteFile(figures, []byte("131072, 119808\n"), 0o777) })
				attrs := map[string]cty.Value{"nvidia_smi": cty.StringVal(smi), "gpu_memory_utilization": cty.NumberFloatVal(0.85), "memory": cty.StringVal("9g"),
					"display_reserve": cty.StringVal("2g")}
				config := fitConfig(t, p, attrs)
				reviewed := planFit(p, n.node, cty.NilVal, config)
				if reviewed.Diagnostics.HasErrors() {
					t.Fatal(reviewed.Diagnostics.Err())
				}
				null := cty.NullVal(reviewed.Planned.Type())
				g := sdktest.GRPC(t, command.New()) // the replan runs in the plugin, as in the engine
				for _, tc := range []struct {
					free    string
					applied bool
				}{{"119700", true}, {"100000", false}} {
					if err := os.WriteFile(figures, []byte("131072, "+tc.free+"\n"), 0o777); err != nil {
						t.Fatal(err)
					}
					pr := sdk.PlanAndApply(context.Background(), g, sdk.PlanApplyRequest{TypeName: fitTyp, Address: fitTyp + ".x", Node: n.node,
						Prior: null, Config: config, Reviewed: reviewed.Planned}, nil, func(sdk.Progress) {})
					if pr.Applied != tc.applied || pr.PlanChanged {
						t.Fatalf("free %s MiB at apply: applied %v (plan changed %v at %v), want applied %v: %v", tc.free, pr.Applied, pr.PlanChanged,
							pr.Changed, tc.applied, pr.Diagnostics.Err())
					}
					if want := "of 118.9 GiB available (116.9 GiB + 2.0 GiB the display unlock frees)"; tc.applied && !strings.Contains(pr.NewState.GetAttr("budget").AsString(), want) {
						t.Errorf("applied budget %v, want the figures at apply: %q", pr.NewState.GetAttr("budget"), want)
					}
					if !tc.applied && (pr.Diagnostics.Err() == nil || !strings.Contains(pr.Diagnostics.Err().Error(), "(97.7 GiB + 2.0 GiB the display unlock frees)")) {
						t.Errorf("no longer fits at apply: %v, want the new numbers", pr.Diagnostics.Err())
					}
				}
			})

			t.Run("a change asks for the growth only", func(t *testing.T) {
				// Once the recipe runs, its server holds what it was checked
				// for: a change needs only the growth to be free.
				figures := filepath.Join(filepath.Dir(smi), "figures")
				t.Cleanup(func() { os.WriteFile(figures, []byte("131072, 119808\n"), 0o777) })
				attrs := map[string]cty.Value{"nvidia_smi": cty.StringVal(smi), "gpu_memory_utilization": cty.NumberFloatVal(0.85), "memory": cty.StringVal("9g"),
					"display_reserve": cty.StringVal("2g")}
				st, _ := sdktest.Create(t, p, fitTyp, n.node, fitConfig(t, p, attrs))
				attrs["memory"] = cty.StringVal("12g") // 120.8 GiB: more than a create could have
				for _, tc := range []struct {
					free  string
					words string
				}{
					{"119808", "asks 120.8 GiB = 108.8 GiB (gpu_memory_utilization 0.85 of 128.0 GiB) + 12.0 GiB (the container's memory limit), 3.0 GiB more than the 117.8 GiB the running recipe was checked for, of 117.0 GiB available"},
					{"2048", "3.0 GiB more than the 117.8 GiB the running recipe was checked for, of 2.0 GiB available, total 128.0 GiB, from nvidia-smi: does not fit, 1.0 GiB short"},
				} {
					if err := os.WriteFile(figures, []byte("131072, "+tc.free+"\n"), 0o777); err != nil {
						t.Fatal(err)
					}
					resp := planFit(p, n.node, st, fitConfig(t, p, attrs))
					got := diagText(resp.Diagnostics)
					if !resp.Diagnostics.HasErrors() {
						got = resp.Planned.GetAttr("budget").AsString()
					}
					if !strings.Contains(got, tc.words) {
						t.Errorf("free %s MiB: got\n%s\nwant %q", tc.free, got, tc.words)
					}
				}
			})

			t.Run("override without a reason", func(t *testing.T) {
				resp := planFit(p, n.node, cty.NilVal, fitConfig(t, p, map[string]cty.Value{
					"nvidia_smi": cty.StringVal(smi), "model_bytes": cty.NumberIntVal(1), "override_reason": cty.StringVal("  "),
				}))
				if err := resp.Diagnostics.Err(); err == nil || !strings.Contains(err.Error(), "needs a reason") {
					t.Errorf("plan error = %v, want one that asks for a reason", err)
				}
			})

			t.Run("model size known only at apply", func(t *testing.T) {
				config := fitConfig(t, p, map[string]cty.Value{"nvidia_smi": cty.StringVal(smi), "model_bytes": cty.UnknownVal(cty.Number)})
				resp := planFit(p, n.node, cty.NilVal, config)
				if resp.Diagnostics.HasErrors() || resp.Planned.GetAttr("budget").IsKnown() || !strings.Contains(diagText(resp.Diagnostics), "checked at apply") {
					t.Fatalf("plan: %s %#v", diagText(resp.Diagnostics), resp.Planned)
				}
				known := fitConfig(t, p, map[string]cty.Value{"nvidia_smi": cty.StringVal(smi), "model_bytes": cty.NumberIntVal(200 << 30)})
				vals := resp.Planned.AsValueMap()
				vals["model_bytes"] = cty.NumberIntVal(200 << 30)
				ap := p.ApplyResourceChange(context.Background(), sdk.ApplyRequest{TypeName: fitTyp, Address: fitTyp + ".x", Node: n.node,
					Prior: cty.NullVal(resp.Planned.Type()), Planned: cty.ObjectVal(vals), Config: known}, func(sdk.Progress) {})
				if err := ap.Diagnostics.Err(); err == nil || !strings.Contains(err.Error(), "200.0 GiB") || !ap.NewState.IsNull() {
					t.Errorf("apply of a deferred check that does not fit: %v, state %#v", err, ap.NewState)
				}
			})
		})
	}
}

// TestMemoryFitValidate: arguments that cannot describe a budget are
// refused at validate, with the attribute named.
func TestMemoryFitValidate(t *testing.T) {
	p := command.New()
	rs := p.(*sdk.Router).Resources[fitTyp]
	for _, tc := range []struct {
		attrs map[string]cty.Value
		want  string // "" = valid
	}{
		{map[string]cty.Value{"containers": cty.NumberIntVal(2)}, ""},
		{map[string]cty.Value{"containers": cty.NumberIntVal(0)}, "Invalid containers"},
		{map[string]cty.Value{"containers": cty.NumberFloatVal(1.5)}, "Invalid containers"},
		{map[string]cty.Value{"gpu_memory_utilization": cty.NumberFloatVal(1.2)}, "Invalid gpu_memory_utilization"},
		{map[string]cty.Value{"memory": cty.StringVal("nine gigs")}, "Invalid memory"},
		{map[string]cty.Value{"model_bytes": cty.NumberIntVal(-1)}, "Invalid model_bytes"},
		{map[string]cty.Value{"override_reason": cty.StringVal("  ")}, "Override without a reason"},
	} {
		diags := rs.Validate(context.Background(), fitConfig(t, p, tc.attrs))
		got := diagText(diags)
		if tc.want == "" && diags.HasErrors() || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%v: diagnostics %q, want %q", tc.attrs, got, tc.want)
		}
	}
}
