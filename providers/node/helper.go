package node

import (
	"os"
	"os/user"
	"strings"

	"github.com/sparkform/sparkform/providers/node/nodebin"
	"github.com/sparkform/sparkform/providers/sdk"
)

// The node helper (internal/nodehelper, cmd/sparkform-node).
//
// A provider's remote script takes the helper's path as an argument and
// execs it when it is there (`[ -x "$h" ]`: a shell builtin, no process)
// in place of the tools it would chain; when it is not (sparkform built
// without it, an arch not shipped, an install that failed) the script runs
// its tools as before. The pool installs the helper during the node check
// (Pool.Check, install.go) when the node lacks this version; destroy
// leaves it (a cache: remove the folder by hand, the next run installs it
// again).
//
// The path carries the version id, so a node holds each version once and
// a sparkform never runs another's. A node with become (or a root login)
// keeps it in a root-owned folder, because root execs it there; otherwise
// in the user's cache, where only that user runs it.

// HelperDirEnv, when set to an absolute path DIR, moves the helper's
// folders on every node under it: DIR/root where root runs the helper
// (in place of /var/lib/sparkform/bin), DIR/USER for a login USER
// without become (in place of ~/.cache/sparkform/bin; DIR/USER must be
// USER's). For tests: the test bed's nodes share this machine's
// filesystem, and each bed keeps its installs apart (testbed.Bed's
// HelperDir).
const HelperDirEnv = "SPARKFORM_NODE_HELPER_DIR"

// HelperEnv overrides the helper's version id for this process (tests
// that install a helper they built; "-" turns the helper off). Unset: the
// id of the helper built into this binary (nodebin.ID), if any.
const HelperEnv = "SPARKFORM_NODE_HELPER"

// Folders the helper is kept in on a node.
const (
	helperRootDir = "/var/lib/sparkform/bin"
	helperUserDir = "~/.cache/sparkform/bin" // "~/": the login's $HOME
)

// HelperID is the version id of the helper this process uses; "" when it
// has none.
func HelperID() string {
	if v, ok := os.LookupEnv(HelperEnv); ok {
		if v == "-" {
			return ""
		}
		return v
	}
	return nodebin.ID()
}

// HelperPath is where the helper is on node n, for a remote script's
// argument: an absolute path, or one starting "~/" that the script
// expands with its $HOME (HelperShell does); "" when this process has no
// helper or n is not reached over SSH.
func HelperPath(n sdk.Node) string {
	id := HelperID()
	if id == "" || n.Transport == "local" {
		return ""
	}
	return helperDir(n) + "/" + helperName(id)
}

// helperName is the file name of helper version id.
func helperName(id string) string { return "sparkform-node-" + id }

// helperDir is the folder the helper is kept in on n.
func helperDir(n sdk.Node) string {
	if d := strings.TrimRight(os.Getenv(HelperDirEnv), "/"); strings.HasPrefix(d, "/") {
		if helperAsRoot(n) {
			return d + "/root"
		}
		u := n.User
		if u == "" {
			if cu, err := user.Current(); err == nil {
				u = cu.Username
			}
		}
		return d + "/" + u
	}
	if helperAsRoot(n) {
		return helperRootDir
	}
	return helperUserDir
}

// helperAsRoot: root runs n's helper (become, or a root login), so it is
// kept in a folder only root can write.
func helperAsRoot(n sdk.Node) bool { return n.Become || n.User == "root" }

// HelperShell is the POSIX sh lines that set h to the helper path in
// variable v ("~/" expanded) and clear it when the helper is not an
// executable there; a script starts with it. Builtins only.
func HelperShell(v string) string {
	return `case $` + v + ` in "~/"*) ` + v + `=$HOME/${` + v + `#"~/"} ;; esac
[ -n "$` + v + `" ] && [ -x "$` + v + `" ] || ` + v + `=
`
}
