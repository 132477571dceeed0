package sdk

import (
	"encoding/binary"
	"fmt"
)

// MaxValueDepth bounds how deeply a decoded value may nest. Config values
// nest a few levels; this leaves room for generated ones and still keeps a
// crafted value from running the decoder's recursion without end.
const MaxValueDepth = 10000

// CheckMsgpack walks one msgpack value in b without decoding it and fails
// when a declared size could not be backed by the bytes that follow: an
// array or map of n elements needs at least n (2n) more bytes, a string,
// binary or extension of n bytes needs n. cty's decoder allocates what a
// header declares before reading the elements (26 bytes declaring 2^31-1
// list elements ran the CLI out of memory), so every value read from a
// plan file or a plugin reply passes here first. It also refuses trailing
// bytes and nesting deeper than MaxValueDepth.
func CheckMsgpack(b []byte) error {
	pending := []uint64{1} // values still to read at each open level
	i := 0
	for len(pending) > 0 {
		top := len(pending) - 1
		if pending[top] == 0 {
			pending = pending[:top]
			continue
		}
		pending[top]--
		if i >= len(b) {
			return fmt.Errorf("malformed value: truncated at byte %d", i)
		}
		c := b[i]
		i++
		rest := uint64(len(b) - i)
		// size reads a big-endian length of n bytes.
		size := func(n int) (uint64, error) {
			if len(b)-i < n {
				return 0, fmt.Errorf("malformed value: truncated length at byte %d", i)
			}
			var v uint64
			switch n {
			case 1:
				v = uint64(b[i])
			case 2:
				v = uint64(binary.BigEndian.Uint16(b[i:]))
			case 4:
				v = uint64(binary.BigEndian.Uint32(b[i:]))
			}
			i += n
			rest = uint64(len(b) - i)
			return v, nil
		}
		skip := func(n uint64) error {
			if n > rest {
				return fmt.Errorf("malformed value: %d bytes declared at byte %d, %d left", n, i, rest)
			}
			i += int(n)
			return nil
		}
		open := func(n uint64) error {
			if n > rest {
				return fmt.Errorf("malformed value: %d values declared at byte %d, only %d bytes left", n, i, rest)
			}
			if len(pending) >= MaxValueDepth {
				return fmt.Errorf("malformed value: nested deeper than %d levels", MaxValueDepth)
			}
			pending = append(pending, n)
			return nil
		}
		var err error
		var n uint64
		switch {
		case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
			// fixint, nil, bool
		case c >= 0x80 && c <= 0x8f:
			err = open(2 * uint64(c&0x0f))
		case c >= 0x90 && c <= 0x9f:
			err = open(uint64(c & 0x0f))
		case c >= 0xa0 && c <= 0xbf:
			err = skip(uint64(c & 0x1f))
		case c == 0xc4 || c == 0xd9: // bin8, str8
			if n, err = size(1); err == nil {
				err = skip(n)
			}
		case c == 0xc5 || c == 0xda:
			if n, err = size(2); err == nil {
				err = skip(n)
			}
		case c == 0xc6 || c == 0xdb:
			if n, err = size(4); err == nil {
				err = skip(n)
			}
		case c == 0xc7 || c == 0xc8 || c == 0xc9: // ext8/16/32: length, type, data
			if n, err = size(1 << (c - 0xc7)); err == nil {
				err = skip(n + 1)
			}
		case c == 0xca:
			err = skip(4)
		case c == 0xcb:
			err = skip(8)
		case c >= 0xcc && c <= 0xcf: // uint8..64
			err = skip(1 << (c - 0xcc))
		case c >= 0xd0 && c <= 0xd3: // int8..64
			err = skip(1 << (c - 0xd0))
		case c >= 0xd4 && c <= 0xd8: // fixext 1..16: type, data
			err = skip(1 + 1<<(c-0xd4))
		case c == 0xdc:
			if n, err = size(2); err == nil {
				err = open(n)
			}
		case c == 0xdd:
			if n, err = size(4); err == nil {
				err = open(n)
			}
		case c == 0xde:
			if n, err = size(2); err == nil {
				err = open(2 * n)
			}
		case c == 0xdf:
			if n, err = size(4); err == nil {
				err = open(2 * n)
			}
		default: // 0xc1
			err = fmt.Errorf("malformed value: byte 0x%x at %d is not msgpack", c, i-1)
		}
		if err != nil {
			return err
		}
	}
	if i != len(b) {
		return fmt.Errorf("malformed value: %d trailing bytes", len(b)-i)
	}
	return nil
}
