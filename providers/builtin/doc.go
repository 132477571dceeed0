// Package builtin is the provider named "sparkform": resources that live
// only in state and touch no node.
//
// sparkform_data holds a value (input), republishes it as output, and gets
// a random id at create; a change of triggers_replace replaces it (a new
// id), which is how a user ties a replacement to any value. Read returns
// the prior state as is, with zero remote round trips, so it also measures
// the engine's own cost (the benchmarks run 10,000 of them).
//
// The sparkform binary serves it in its own process (plugin.Options.
// InProcess), as OpenTofu serves terraform_data: it reaches no node and does
// no I/O, so a plugin would add only the encoding and round trip of every
// call. It must stay that way: no call may reach a node, run a command or
// block. `sparkform internal-plugin sparkform` still serves it as a plugin.
package builtin
