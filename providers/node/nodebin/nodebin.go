// Package nodebin holds the node helper's binaries (cmd/sparkform-node,
// built for linux/amd64 and linux/arm64 by `go generate` here, which
// `make build` and `make test` run) inside sparkform, and their version
// id. A sparkform built without them (a plain `go build`) has no helper:
// ID is "" and every provider runs its shell scripts, as before.
package nodebin

//go:generate sh ./gen.sh

import (
	"embed"
	"io"
	"strings"
)

//go:embed all:bin
var files embed.FS

// ID is the helper's version: the first 16 hex digits of the sha256 of
// the binaries, written by gen.sh; "" when they were not built.
func ID() string {
	b, err := files.ReadFile("bin/id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// Binary is the helper for GOARCH goarch ("amd64", "arm64"), if built:
// a reader of the embedded bytes and their size. It reads them in place
// (ReadFile would copy the 6 MB, once per node the helper goes to: a
// fleet's first plan held 32 copies at once).
func Binary(goarch string) (io.Reader, int64, bool) {
	f, err := files.Open("bin/sparkform-node-linux-" + goarch)
	if err != nil {
		return nil, 0, false
	}
	st, err := f.Stat()
	if err != nil {
		return nil, 0, false
	}
	return f, st.Size(), true
}
