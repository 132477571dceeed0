// Package command is the sparkform provider "node" and its resource types
// node_command, the honest escape hatch for a step no other provider
// models (Terraform's null resource with a remote command, Ansible's
// `command` with `creates`), and node_memory_fit, the memory budget a
// serving container is checked against at plan.
//
// # node_command
//
// Each of create, update, destroy and check is either an argv list
// (`create = ["mkdir", "-p", "/data/x"]`) or a script (`create_script =
// "..."`), never both. An argv runs as given: every word reaches the node
// as one argument (providers/node quotes it), so no user value is ever a
// shell string. A script runs as INTERPRETER... SCRIPT: the script is one
// argument of the interpreter (default ["/bin/sh", "-c"]), not text pasted
// into a command line, and stdin is left free for the commands in it.
// env (extra environment), dir (working folder), become (sudo -n) and
// timeout (a Go duration, default 10m) apply to every command.
//
// Lifecycle:
//   - create runs on create. A failed create keeps the object in state
//     (the engine marks it tainted, so the next apply runs destroy and
//     create again); the error shows the exit status, stdout and stderr.
//   - check, when given, runs at refresh for every instance: exit 0 means
//     present and current, any other exit (except 126/127, which mean the
//     check itself cannot run and are errors) means gone, so the next plan
//     creates it again. That is how drift is seen. After a create or update
//     the check runs once more: a check that still fails is an error, so a
//     create/check pair that disagree is caught at the first apply.
//     Without check, Read cannot see the node and reports the stored value;
//     every plan then carries a warning saying drift cannot be seen.
//   - A change to what create does (create, create_script, interpreter,
//     env, dir, become) runs update in place when update is given, and
//     replaces the object (destroy, then create) when it is not. A change
//     to triggers_replace always replaces it. A change to destroy, check,
//     update or timeout alone is stored without running anything.
//   - destroy runs the destroy command stored with the object (the one in
//     effect when it was last applied). A failed destroy keeps the object
//     in state so that a later destroy retries. Without destroy, destroying
//     only forgets the object, with a warning.
//
// Computed: id (random, set at create, new on replace) and stdout (what
// the last create or update printed, at most 64 KiB: the tail).
//
// Cost: Read is one remote command per instance that has a check (run
// concurrently, at most 8 at once per node), none without; Apply is one
// command plus one for the check.
//
// Import is not supported: there is nothing on a node that says a command
// once ran.
//
// # node_memory_fit
//
// Plan reads the node's memory in one command (nvidia-smi's memory.total
// and memory.free summed over the GPUs, where nvidia-smi is there and gives
// figures; else MemTotal and MemAvailable of /proc/meminfo) and compares
// what the container asks (gpu_memory_utilization x total, else
// model_bytes; plus memory, else shm_size) with what is available plus
// display_reserve. Not fitting is a plan error with the numbers
// (ErrDoesNotFit), so nothing is applied; override_reason turns it into a
// warning, and an empty reason is an error. The budget is stored
// (source, total_bytes, available_bytes, asked_bytes, budget) and shown
// in the plan. The check runs at create and when an argument changes,
// never at refresh (the server, once running, holds the memory it was
// checked for), and on a change only the growth over the prior
// asked_bytes must be available. available_bytes and budget are
// Volatile: apply plans again and holds the recipe to fit then, not to
// the figures the plan showed. With an argument unknown at plan (or
// -refresh=false) the check runs at apply.
package command
