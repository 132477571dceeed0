// Package node is the transport every provider uses to act on a machine:
// SSH (golang.org/x/crypto/ssh with verified host keys, agent and key-file
// auth, sftp for files) or the local machine, behind one interface, Conn.
//
// Commands are argv lists, never shell strings built from user values:
// over SSH each argument is quoted for the remote POSIX shell. Become runs
// a command through `sudo -n`; when sudo wants a password the error says so.
//
// A Pool keeps one connection per distinct sdk.Node for the life of the
// plugin process.
package node
