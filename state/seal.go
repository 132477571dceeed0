package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
)

// Format 4 seals every stored value: bbolt checksums its meta pages and
// nothing else, so a flipped byte inside a record was read as data (a
// value shown as drift, a plan that changes a node to match it) and the
// next writer copied it into the last-good copy. A sealed value is
//
//	byte    sealTag
//	uint32  CRC-32C (Castagnoli) of the key, then the body (big-endian)
//	        body: the record as format 3 stores it
//
// in resources, journal, history and interned; the key is covered, so a
// flipped key (an address, an interned id) fails too. The meta bucket's
// values (lineage, serial, version, created, outputs) are covered by one
// checksum under meta/check. The checksum covers the encoded record as a
// whole, whatever its fields.
const (
	sealTag  = 0x04
	sealHead = 5
)

// sealedVersion is the first format whose values are sealed.
const sealedVersion = 4

var (
	keyCheck  = []byte("check")
	keyCounts = []byte("counts")
)

// meta/counts holds how many entries each sealed bucket has (uvarints,
// in sealedBuckets' order), kept by every commit. A checksum per record
// cannot see a record that is gone: a lowered element count in a leaf
// page drops the records after it, and the tree around them still reads
// well. The full check counts them.
type bucketCounts [4]int64

const (
	cntResources = iota
	cntJournal
	cntHistory
	cntInterned
)

func readCounts(m *bolt.Bucket) (bucketCounts, bool) {
	var c bucketCounts
	v := m.Get(keyCounts)
	if v == nil {
		return c, false
	}
	for i := range c {
		n, k := binary.Uvarint(v)
		if k <= 0 {
			return c, false
		}
		c[i], v = int64(n), v[k:]
	}
	return c, len(v) == 0
}

func putCounts(m *bolt.Bucket, c bucketCounts) error {
	var v []byte
	for _, n := range c {
		v = binary.AppendUvarint(v, uint64(max(n, 0)))
	}
	if bytes.Equal(m.Get(keyCounts), v) {
		return nil
	}
	return m.Put(keyCounts, v)
}

// countAll counts every sealed bucket's entries (a new, replaced or
// upgraded state: O(N), like the rest of those writes).
func countAll(tx *bolt.Tx) error {
	var c bucketCounts
	for i, name := range sealedBuckets {
		if b := tx.Bucket(name); b != nil {
			b.ForEach(func(_, _ []byte) error { c[i]++; return nil })
		}
	}
	return putCounts(tx.Bucket(bucketMeta), c)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func sealSum(key, body []byte) uint32 {
	return crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, body)
}

// seal returns the stored form of body under key.
func seal(key, body []byte) []byte {
	out := make([]byte, sealHead, sealHead+len(body))
	out[0] = sealTag
	binary.BigEndian.PutUint32(out[1:], sealSum(key, body))
	return append(out, body...)
}

// unseal returns the body of a sealed value (a slice of v, which may be
// bbolt's mapping), or a *corruptError.
func unseal(key, v []byte) ([]byte, error) {
	if len(v) < sealHead || v[0] != sealTag {
		return nil, &corruptError{key: string(key), why: "it has no checksum (format 4 seals every record)"}
	}
	body := v[sealHead:]
	if binary.BigEndian.Uint32(v[1:]) != sealSum(key, body) {
		return nil, &corruptError{key: string(key), why: "its checksum does not match (bytes changed after sparkform wrote it)"}
	}
	return body, nil
}

// sealed reports whether tx's file seals its values (format 4 and
// later). A file with meta/check is sealed whatever its version key says:
// a flip there must not turn the checks off.
func sealed(tx *bolt.Tx) bool {
	m := tx.Bucket(bucketMeta)
	if m == nil {
		return false
	}
	if m.Get(keyCheck) != nil {
		return true
	}
	v := m.Get(keyVersion)
	return len(v) == 8 && binary.BigEndian.Uint64(v) >= sealedVersion
}

// open returns the record stored under key: unsealed in a sealed file,
// as it is in an older one.
func openValue(isSealed bool, key, v []byte) ([]byte, error) {
	if !isSealed {
		return v, nil
	}
	return unseal(key, v)
}

// metaKeys are the meta values meta/check covers, in its order.
var metaKeys = [][]byte{keyLineage, keySerial, keyVersion, keyCreated, keyOutputs, keyCounts}

func metaSum(m *bolt.Bucket) []byte {
	h := crc32.New(castagnoli)
	var n [binary.MaxVarintLen64]byte
	for _, k := range metaKeys {
		v := m.Get(k)
		if v == nil {
			h.Write([]byte{0}) // absent differs from empty
			continue
		}
		h.Write([]byte{1})
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(v)))])
		h.Write(v)
	}
	return binary.BigEndian.AppendUint32(nil, h.Sum32())
}

// putMetaCheck seals the meta bucket after a write transaction changed it
// (a no-op when it did not, so an intent-only commit leaves meta's page).
func putMetaCheck(tx *bolt.Tx) error {
	m := tx.Bucket(bucketMeta)
	if m == nil {
		return nil
	}
	sum := metaSum(m)
	if bytes.Equal(m.Get(keyCheck), sum) {
		return nil
	}
	return m.Put(keyCheck, sum)
}

// checkMeta verifies meta/check in a sealed file.
func checkMeta(tx *bolt.Tx, path string) error {
	m := tx.Bucket(bucketMeta)
	if m == nil || !sealed(tx) {
		return nil
	}
	got := m.Get(keyCheck)
	if got == nil {
		return damaged(path, "its meta data (lineage, serial, outputs) has no checksum, which a format-%d file always has", FormatVersion)
	}
	if !bytes.Equal(got, metaSum(m)) {
		return damaged(path, "its meta data (lineage, serial, format version, outputs) does not match its checksum (bytes changed after sparkform wrote them)")
	}
	return nil
}

// sealedBuckets are the buckets whose every value is sealed.
var sealedBuckets = [][]byte{bucketResources, bucketJournal, bucketHistory, bucketInterned}

// checkRecords is the full check: once per command (the first open of a
// Store), and before a file is copied to the last-good copy. In a sealed
// file it verifies every checksum and the record counts, which costs
// reading the records once; decode also decodes every record and the
// outputs (the last-good copy: decoding them all at every open made a
// no-op open of 10,000 instances 6 times slower, and what a command reads
// it decodes anyway). An older format has no checksums: its records are
// always decoded.
func checkRecords(tx *bolt.Tx, path string, decode bool) error {
	if _, err := readMeta(tx, path); err != nil {
		return err
	}
	if err := checkMeta(tx, path); err != nil {
		return err
	}
	if sealed(tx) {
		want, ok := readCounts(tx.Bucket(bucketMeta))
		if !ok {
			return damaged(path, "its record counts (meta/counts) are missing or unreadable")
		}
		for i, name := range sealedBuckets {
			n := int64(0)
			err := tx.Bucket(name).ForEach(func(k, v []byte) error {
				n++
				if _, err := unseal(k, v); err != nil {
					return damaged(path, "the %s record %q is corrupt: %s", name, k, err.(*corruptError).why)
				}
				return nil
			})
			if err != nil {
				return err
			}
			if n != want[i] {
				return damaged(path, "its %s bucket holds %d records where its meta data counts %d: records were cut off or added", name, n, want[i])
			}
		}
		if !decode {
			return nil
		}
	}
	if _, err := readOutputs(tx); err != nil {
		return inFile(path, err)
	}
	st := newStrs(tx)
	if _, err := readResourcesWith(tx, st); err != nil {
		return inFile(path, err)
	}
	if _, err := readIntents(tx); err != nil {
		return inFile(path, err)
	}
	return nil
}

// corruptError is a record that cannot be decoded. The store that read it
// turns it into a *DamagedError naming its file (inFile).
type corruptError struct{ key, why string }

func (e *corruptError) Error() string {
	key := e.key
	if !utf8.ValidString(key) {
		key = fmt.Sprintf("%q", key)
	}
	return fmt.Sprintf("%v: record for %s is corrupt: %s", ErrFormat, key, e.why)
}

func (e *corruptError) Is(target error) bool { return target == ErrFormat }

// inFile turns a corrupt record read from the file at path into a
// *DamagedError (naming the file and the restore); other errors pass.
func inFile(path string, err error) error {
	var ce *corruptError
	if err == nil || !errors.As(err, &ce) {
		return err
	}
	var de *DamagedError
	if errors.As(err, &de) {
		return err
	}
	key := ce.key
	if !utf8.ValidString(key) {
		key = fmt.Sprintf("%q", key)
	}
	return damaged(path, "the record for %s is corrupt: %s", key, ce.why)
}

// Bounds on a value's cty type (Resource.ValueType, cty JSON). Decoding a
// type costs far more than its size where it nests: an 85 KB list of
// lists took 1.1 GB to decode (4 GB in 90 KB). Real types nest a few
// levels (an object of lists of objects is 5 here); a record past these
// is damage, refused before anything decodes it.
const (
	MaxValueTypeDepth = 64
	MaxValueTypeSize  = 1 << 20
)

// CheckValueType refuses a value type (cty JSON) past the bounds above.
func CheckValueType(b []byte) error {
	if len(b) > MaxValueTypeSize {
		return fmt.Errorf("its value type is %d bytes, more than %d", len(b), MaxValueTypeSize)
	}
	if d := jsonDepth(b, MaxValueTypeDepth); d > MaxValueTypeDepth {
		return fmt.Errorf("its value type nests more than %d levels deep", MaxValueTypeDepth)
	}
	return nil
}

// JSONDepth is how deep b's arrays and objects nest (JSON), counting up
// to limit+1 at most: a cheap bound before a decoder whose cost grows with
// the nesting.
func JSONDepth(b []byte, limit int) int { return jsonDepth(b, limit) }

func jsonDepth(b []byte, limit int) int {
	depth, most, inStr := 0, 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inStr:
			if c == '\\' {
				i++
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '[' || c == '{':
			depth++
			if depth > most {
				most = depth
				if most > limit {
					return most
				}
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return most
}
