package node

import (
	"bytes"
	"io"
)

// SetHelperBinary makes f the source of the helper binaries the node
// check installs (a test's own build in place of nodebin's) until the
// returned func restores it.
func SetHelperBinary(f func(id, goarch string) ([]byte, bool)) (restore func()) {
	old := helperBinary
	helperBinary = func(id, goarch string) (io.Reader, int64, bool) {
		b, ok := f(id, goarch)
		return bytes.NewReader(b), int64(len(b)), ok
	}
	return func() { helperBinary = old }
}

// GoArch is goArch, for its table test.
var GoArch = goArch
