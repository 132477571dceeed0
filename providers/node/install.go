package node

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sparkform/sparkform/providers/node/nodebin"
	"github.com/sparkform/sparkform/providers/sdk"
)

// Installing the node helper (helper.go) during the node check.
//
// What the check learns costs no process of its own on a node with
// become: the held shell's ready line says whether the helper is there
// (held.go). Elsewhere (no become, or a root login) one command does:
// a shell that tests the path with builtins and, only when the helper is
// missing, execs `uname -m`; without become a record in this machine's
// cache that it was there within a day spares that command
// (helperSeenFor). When it is missing, the binary for the
// node's arch (nodebin) goes up on one command's stdin: written to a
// temporary sibling, its size checked, run once (`version`: it executes
// on this node), renamed into place, and the folder's other
// sparkform-node-* versions removed. For root (become, a root login) the
// folder is root-owned, mode 0755; otherwise the login's
// ~/.cache/sparkform/bin. A node it cannot be installed on (an arch not
// shipped, a read-only or full disk, noexec) is told in one line and runs
// the providers' shell scripts, as a sparkform without the helper does:
// installing never fails a plan.

// helperState is what is known of the helper on a connection's node.
type helperState int

const (
	helperUnknown helperState = iota // not asked yet
	helperPresent                    // an executable at HelperPath
	helperAbsent                     // not there (helperArch: uname -m)
)

// setHelper records what the node check found.
func (s *SSH) setHelper(st helperState, arch string) {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	s.helper, s.helperArch = st, arch
}

func (s *SSH) helperKnown() (helperState, string) {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	return s.helper, s.helperArch
}

// helperBinary returns the helper version id's binary for GOARCH goarch:
// the one built into this sparkform (nodebin) when id is its id. Tests
// replace it to install a helper they built.
var helperBinary = func(id, goarch string) (io.Reader, int64, bool) {
	if id == "" || id != nodebin.ID() {
		return nil, 0, false
	}
	return nodebin.Binary(goarch)
}

// goArch is the GOARCH of a node whose `uname -m` is machine; "" for one
// the helper is not built for.
func goArch(machine string) string {
	switch strings.TrimSpace(machine) {
	case "aarch64", "arm64":
		return "arm64"
	case "x86_64", "amd64":
		return "amd64"
	}
	return ""
}

// helperProbe tests for the helper at $1 ("~/" expanded), builtins
// only; when it is missing it execs `uname -m` (the node's arch, for the
// install).
var helperProbe = "h=$1\n" + HelperShell("h") + `[ -n "$h" ] || exec uname -m`

// helperInstall writes the helper from stdin: $1 the folder ("~/"
// expanded), $2 the file name, $3 its size, $4 "root" when the folder
// must be root's (then its parent gets go+x: the login user's scripts
// reach it). Other sparkform-node-* files in the folder (other
// versions) a day old or more are removed once the new one is in place;
// nothing else is.
const helperInstall = `d=$1 n=$2 size=$3
case $d in "~/"*) d=$HOME/${d#"~/"} ;; esac
umask 022
mkdir -p -- "$d" || exit 1
if [ "$4" = root ]; then
	chown 0:0 "$d" && chmod 0755 "$d" || exit 1
	# The login user's scripts exec it too: its parent may be the restore
	# records' 0700 /var/lib/sparkform (their own folder stays 0700).
	chmod go+x -- "${d%/*}" || exit 1
fi
t=$d/.$n.tmp.$$
trap 'rm -f -- "$t"' EXIT
cat > "$t" || exit 1
got=$(wc -c < "$t")
[ "$got" -eq "$size" ] || { echo "sparkform-node: $got of $size bytes arrived" >&2; exit 1; }
chmod 0755 "$t" && "$t" version > /dev/null && mv -f -- "$t" "$d/$n" || exit 1
# Other versions not installed or replaced for a day go: one that is
# newer may be another sparkform's on this node right now (a teammate's
# run between its [ -x ] and its exec would fail).
find "$d" -maxdepth 1 -name 'sparkform-node-*' ! -name "$n" ! -type d -mmin +1440 -exec rm -f -- {} + || :`

// ensureHelper makes sure the helper is on n (connection c) after the
// node check: it learns whether it is there (from the held shell, else one
// probe command) and installs it when it is not. Nothing it meets is an
// error of the check: a node without the helper runs the scripts.
func ensureHelper(ctx context.Context, c Conn, n sdk.Node) {
	s, ok := c.(*SSH)
	if !ok || s.relayed {
		return
	}
	path := HelperPath(n)
	if path == "" {
		return
	}
	st, arch := s.helperKnown()
	if st == helperUnknown && helperSeen(n, path) {
		return // no become: the probe would cost a session; seen lately
	}
	if st == helperUnknown {
		res, err := s.Run(ctx, Cmd{Argv: []string{"sh", "-c", helperProbe, "sh", path}})
		if err != nil {
			s.opts.debug("node helper: cannot tell whether it is installed; the shell scripts run", "node", n.Name, "error", err.Error())
			return
		}
		st, arch = helperAbsent, strings.TrimSpace(string(res.Stdout))
		if arch == "" {
			st = helperPresent
		}
		s.setHelper(st, arch)
	}
	if st == helperPresent {
		markHelperSeen(n, path)
		return
	}
	goarch := goArch(arch)
	bin, size, ok := helperBinary(HelperID(), goarch)
	if goarch == "" || !ok {
		s.opts.debug("node helper: none for this node's arch; the shell scripts run", "node", n.Name, "arch", arch)
		return
	}
	if err := s.installHelper(ctx, n, path, bin, size); err != nil {
		s.opts.notify(fmt.Sprintf("node %s: could not install sparkform's node helper at %s (%v); this run uses the shell scripts instead", n.Name, path, err))
		return
	}
	s.setHelper(helperPresent, arch)
	markHelperSeen(n, path)
	s.opts.debug("node helper installed", "node", n.Name, "path", path, "bytes", size)
}

// helperSeenFor is how long a record that this machine saw the helper on
// a node spares the node check of a node without become its probe (a
// session: about as much of the node's CPU as the login, see
// bench/README.md). A node that lost the helper meanwhile runs the
// scripts until the record is older; with become the held shell answers
// for free and no record is kept.
const helperSeenFor = 24 * time.Hour

// seenFile is the record for the helper at path on n: a file under the
// user's cache folder named by a hash of n's key and the path.
func seenFile(n sdk.Node, path string) string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	sum := sha256.Sum256([]byte(n.Key() + "\x00" + path))
	return filepath.Join(dir, "sparkform", "helper-seen", hex.EncodeToString(sum[:12]))
}

// helperSeen reports whether the helper at path on n (without become)
// was seen or installed within helperSeenFor.
func helperSeen(n sdk.Node, path string) bool {
	if helperAsRoot(n) {
		return false
	}
	f := seenFile(n, path)
	if f == "" {
		return false
	}
	fi, err := os.Stat(f)
	return err == nil && time.Since(fi.ModTime()) < helperSeenFor
}

// markHelperSeen records that the helper at path is on n (nodes without
// become only). A record that cannot be written costs a probe next time.
func markHelperSeen(n sdk.Node, path string) {
	if helperAsRoot(n) {
		return
	}
	f := seenFile(n, path)
	if f == "" || os.MkdirAll(filepath.Dir(f), 0o700) != nil {
		return
	}
	now := time.Now()
	if os.Chtimes(f, now, now) != nil {
		_ = os.WriteFile(f, nil, 0o600)
	}
}

// installHelper uploads bin (size bytes) to path on s's node (see
// helperInstall).
func (s *SSH) installHelper(ctx context.Context, n sdk.Node, path string, bin io.Reader, size int64) error {
	i := strings.LastIndexByte(path, '/')
	owner := ""
	if helperAsRoot(n) {
		owner = "root"
	}
	_, err := s.Run(ctx, Cmd{
		Argv:   []string{"sh", "-c", helperInstall, "sh", path[:i], path[i+1:], strconv.FormatInt(size, 10), owner},
		Become: n.Become && n.User != "root",
		Stdin:  bin,
	})
	return err
}
