package state

import (
	"bytes"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// bucketInterned holds the refs that many records share (node details,
// resource type, provider, the cty type of values): key a big-endian id
// from the bucket's sequence, value the bytes. Entries are never changed
// or removed (Replace starts the bucket over with the records it
// writes), so an id in any record, history entry or intent stays valid.
var bucketInterned = []byte("interned")

// txInterner interns refs in one write transaction. It reads the bucket
// the first time it is needed: the bucket holds one entry per distinct
// node, type and value type, a handful, not one per instance.
type txInterner struct {
	b      *bolt.Bucket
	ids    map[string]uint64
	sealed bool
	added  int64 // entries written (meta/counts)
}

func newInterner(tx *bolt.Tx) *txInterner {
	return &txInterner{b: tx.Bucket(bucketInterned), sealed: sealed(tx)}
}

func (t *txInterner) id(b []byte) (uint64, error) {
	if t.b == nil {
		return 0, errNoInterned
	}
	if t.ids == nil {
		t.ids = map[string]uint64{}
		err := t.b.ForEach(func(k, v []byte) error {
			if len(k) != 8 {
				return corrupt(fmt.Sprintf("interned %x", k), "an interned key is 8 bytes")
			}
			v, err := openValue(t.sealed, k, v)
			if err != nil {
				return err
			}
			t.ids[string(v)] = binary.BigEndian.Uint64(k)
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	if id, ok := t.ids[string(b)]; ok {
		return id, nil
	}
	id, err := t.b.NextSequence()
	if err != nil {
		return 0, err
	}
	key := u64(id)
	if t.b.Get(key) != nil {
		// The bucket's sequence went back (a damaged bucket header):
		// writing here would change what records already refer to.
		return 0, corrupt(fmt.Sprintf("interned %d", id), "the interned bucket's sequence is behind its entries")
	}
	v := bytes.Clone(b)
	if t.sealed {
		v = seal(key, v)
	}
	if err := t.b.Put(key, v); err != nil {
		return 0, err
	}
	t.ids[string(b)] = id
	t.added++
	return id, nil
}

// txStrs resolves interned ids in a read: loaded once per transaction,
// copied out of bbolt's mapping, so every record decoded in it shares one
// copy of each ref.
type txStrs struct {
	tx     *bolt.Tx
	loaded bool
	m      map[uint64]refEntry
	bad    map[uint64]string // ids whose entry failed its checksum
}

func newStrs(tx *bolt.Tx) *txStrs { return &txStrs{tx: tx} }

func (t *txStrs) get(id uint64) (refEntry, bool) {
	if !t.loaded {
		t.loaded = true
		t.m = map[uint64]refEntry{}
		if b := t.tx.Bucket(bucketInterned); b != nil {
			isSealed := sealed(t.tx)
			b.ForEach(func(k, v []byte) error {
				if len(k) == 8 {
					v, err := openValue(isSealed, k, v)
					if err != nil {
						if t.bad == nil {
							t.bad = map[uint64]string{}
						}
						t.bad[binary.BigEndian.Uint64(k)] = err.(*corruptError).why
						return nil
					}
					c := bytes.Clone(v)
					c = c[:len(c):len(c)] // shared by records: an append copies
					t.m[binary.BigEndian.Uint64(k)] = refEntry{s: string(c), b: c}
				}
				return nil
			})
		}
	}
	e, ok := t.m[id]
	return e, ok
}
