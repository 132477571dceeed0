package plans

import (
	"bytes"
	"testing"
)

// FuzzReadPlan: any bytes as a plan file are a plan or an error, never a
// panic or an allocation a declared length asks for; a plan that reads
// writes and reads back. Corpus: testdata/fuzz/FuzzReadPlan.
func FuzzReadPlan(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := Write(&buf, p); err != nil {
			return // values Read accepts that Write refuses are not a crash
		}
		if _, err := Read(&buf); err != nil {
			t.Fatalf("a plan that was read does not read back after Write: %v", err)
		}
	})
}
