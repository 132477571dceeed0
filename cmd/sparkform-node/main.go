// Command sparkform-node is the node helper that sparkform installs on a
// node and its providers' remote commands run there; see
// internal/nodehelper for the subcommands and their contract. It is not a
// tool for people: each subcommand's output is the format of the shell
// script it replaces.
package main

import (
	"os"

	"github.com/sparkform/sparkform/internal/nodehelper"
)

func main() {
	os.Exit(nodehelper.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
