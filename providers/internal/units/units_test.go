package units

import (
	"errors"
	"testing"
)

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  bool
	}{
		{"9g", 9 << 30, false}, {"9G", 9 << 30, false}, {"9gb", 9 << 30, false}, {"9GiB", 9 << 30, false},
		{"512m", 512 << 20, false}, {"2k", 2048, false}, {"1t", 1 << 40, false}, {" 4096 ", 4096, false},
		{"0", 0, false}, {"1.5g", 3 << 29, false},
		{"", 0, true}, {"banana", 0, true}, {"-1", 0, true}, {"-1g", 0, true}, {"1.5", 0, true},
		{"9x", 0, true}, {"99999999999t", 0, true}, {"g", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseBytes(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.err)
		}
		if err != nil && !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseBytes(%q) error %v is not ErrSyntax", tt.in, err)
		}
	}
}

func TestParseBytesMoreShapes(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  bool
	}{
		{"1p", 1 << 50, false}, {"9 g", 9 << 30, false}, {"2KiB", 2048, false}, {"3mb", 3 << 20, false},
		{"1e3", 0, true}, {"0x10", 0, true}, {"1_000", 0, true}, {"+5", 0, true},
		{"9223372036854775808", 0, true}, {"8192p", 0, true}, {"8191p", 8191 << 50, false}, {"9gx", 0, true}, {"1.5.3g", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseBytes(tt.in)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestHuman(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 17: "17 B", 2048: "2 KiB", 1536 << 20: "1.5 GiB", 20050042: "19.12 MiB", 125868058: "120 MiB",
	} {
		if got := Human(n); got != want {
			t.Errorf("Human(%d) = %q, want %q", n, got, want)
		}
	}
}
