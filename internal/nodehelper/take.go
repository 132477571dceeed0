package nodehelper

import (
	"fmt"
	"io"
	"strconv"
)

func init() { register("take", take) }

// take N copies exactly N bytes of stdin to stdout and reads no byte
// more: the part of a script's stdin that is its own, where more follows
// for another reader. It replaces a shell loop of `read` (a read(2) per
// byte from a pipe: the shell cannot read past a newline it has not seen)
// over the lines up to a marker, when the writer sends their length
// first. Exit status: 0, 1 when stdin ends before N bytes or stdout
// fails, ExitUsage when N is not a number.
func take(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: sparkform-node take N")
		return ExitUsage
	}
	n, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil || n < 0 {
		fmt.Fprintln(stderr, "sparkform-node take: N must be a byte count")
		return ExitUsage
	}
	// io.CopyN reads through a LimitReader: never past N.
	if got, err := io.CopyN(stdout, stdin, n); err != nil {
		fmt.Fprintf(stderr, "sparkform-node take: %d of %d bytes: %v\n", got, n, err)
		return 1
	}
	return 0
}
