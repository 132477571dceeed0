// Package node is the transport every provider uses to act on a machine:
// SSH (golang.org/x/crypto/ssh with verified host keys, agent and key-file
// auth, sftp for files) or the local machine, behind one interface, Conn.
//
// Commands are argv lists, never shell strings built from user values:
// over SSH the remote line is `cd -- DIR && exec [sudo -n --] [env K=V ...]
// ARGV...` with every word Quote'd (see CommandLine). Become runs a
// command through `sudo -n` (skipped when already root); when sudo wants a
// password the error is a *BecomeError matching ErrBecome. Over SSH the
// sudo is a privileged shell (`sudo -n -- sh`, held.go): the node check
// (PrepareBecome) starts one and holds it idle, and the next Become
// command's line is framed into it (a line count, then the quoted lines)
// and exec'd in its place, so a plan's check and its first privileged
// command (often Docker's dial-stdio stream) cost one sudo. The idle shell
// ends with its stdin when the connection closes, kill -9 included.
//
// Host keys are always checked against known_hosts (Node.KnownHosts,
// default ~/.ssh/known_hosts), for the node and for every ProxyJump hop
// (each hop's connection is carried inside the previous one, as ssh -J
// does); there is no option to skip it. An unknown,
// changed or revoked key is a *HostKeyError whose message names the host,
// the fingerprint and the fix. Login: Node.IdentityFile (an encrypted one
// through the ssh-agent holding it), else Node.IdentityFiles (from
// ssh_config) plus the agent's keys unless IdentitiesOnly, else the
// ssh-agent at SSH_AUTH_SOCK plus ~/.ssh/id_ed25519 and ~/.ssh/id_rsa.
//
// DialSSH retries transient failures (refused, reset, timeouts, a hop that
// cannot reach the next yet) with exponential backoff (cenkalti/backoff)
// for RetryWindow(Node.Timeout), telling Options.Notify (default
// sdk.Notice: a line the user sees) before each retry; Transient says
// which errors those are. Options (a Pool's, NewPoolWith, or DialSSHWith's)
// also carry the debug log: one line per handshake and per command. There
// is no package-level setting: each process passes its own.
//
// Each Run is one SSH session (at most 8 at once per connection, below
// OpenSSH's default MaxSessions of 10); file operations share one sftp
// client started on first use, and their errors are *fs.PathError (or
// *os.LinkError for Rename) matching fs.ErrNotExist / fs.ErrPermission
// like the os package's. RoundTrips counts operations that waited on the
// node (each Run, file operation and Dial is one), for both transports.
//
// The node helper (helper.go, install.go) is sparkform's small static
// program that providers' remote scripts exec in place of tool chains
// (node.HelperPath, node.HelperShell). Pool.Check installs it when the
// node lacks this version: the held shell's ready line (become) or one
// builtin-only probe (spared for a day by a record in this machine's
// cache) says whether it is there, so a no-op plan after the install
// costs no process for it; when it is not, the binary for the
// node's `uname -m` goes up on one command's stdin into
// /var/lib/sparkform/bin (root-owned, 0755: become or root logins) or
// ~/.cache/sparkform/bin, and the folder's other sparkform-node-*
// versions a day old are removed. Installing never fails a check (a notice, and
// the scripts run); destroy leaves it, as a cache.
//
// A Pool keeps one connection per distinct sdk.Node (Node.Key) for the
// life of the process: concurrent Gets share one dial, and a connection
// that broke (keepalive or I/O failure) is redialled on the next Get.
// Sentinel errors are in errors.go.
//
// The sparkform process serves its Pool to its plugins through a Relay
// (relay.go): in a plugin started with SPARKFORM_NODE_RELAY set, Open
// reaches an SSH node over the core's one connection to it instead of
// dialling, so a run makes one handshake per node whatever the number of
// providers.
package node
