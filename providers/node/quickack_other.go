//go:build !linux

package node

import "net"

// quickACK is Linux's TCP_QUICKACK (quickack_linux.go); elsewhere the
// connection is used as it is.
func quickACK(c net.Conn) net.Conn { return c }
