// Package nodehelper is the node helper: the small static program
// (cmd/sparkform-node, linux/amd64 and linux/arm64) that sparkform ships
// inside itself (providers/node/nodebin), installs on a node when the
// node lacks its version, and that the providers' remote commands exec in
// place of the shell tools they would otherwise chain (find, sha256sum,
// realpath, curl, openssl, the docker CLI's dial-stdio). One helper
// process replaces a pipeline, so a no-op plan starts fewer processes on
// each node and spends less of its CPU (issue 32), and a hub transfer
// streams, hashes and writes each byte once (issue 29).
//
// The contract of each subcommand is the output of the script it
// replaces: the same lines on stdout (in any order only where the
// provider sorts them; walk's), the same exit status class, and
// complaints on stderr that say what and where (their wording may
// differ), so a provider parses one format whichever ran, and a node
// without the helper (an old install, an arch not shipped, a read-only
// folder) runs the script as before. Each subcommand is one file here
// that registers itself (register) and documents its format.
//
// The helper is a one-shot program: it reads its arguments, does its
// work, writes its answer and exits. It never forks, listens or stays
// running after its stdin or its work ends, and it reads nothing from the
// environment but what the subcommand documents.
package nodehelper
