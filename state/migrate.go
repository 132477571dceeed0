package state

import (
	"bytes"
	"encoding/binary"
	"encoding/json"

	bolt "go.etcd.io/bbolt"
)

// migrate converts a format-1 file (JSON records) to format 2 in the
// writer's opening transaction: every resource, intent and history record
// is decoded as format 1 and encoded as format 2, its value converted to
// the binary form by convert (Options.ConvertValue; without it, or where
// it fails, a JSON value stays JSON until the engine next writes the
// instance). Each bucket is rebuilt in key order, so its pages are full.
func migrate(tx *bolt.Tx, convert func(json.RawMessage) ([]byte, []byte, error)) error {
	if _, err := tx.CreateBucketIfNotExists(bucketInterned); err != nil {
		return err
	}
	in := newInterner(tx)
	err := rebuild(tx, bucketResources, func(k, v []byte) ([]byte, error) {
		r, err := decodeResource(v, string(k), nil)
		if err != nil {
			return nil, err
		}
		if r.Status == "" {
			r.Status = StatusReady
		}
		return appendResource(nil, compactValue(r, convert), string(k), in)
	})
	if err != nil {
		return err
	}
	err = rebuild(tx, bucketJournal, func(k, v []byte) ([]byte, error) {
		it, err := decodeIntent(v, string(k), nil)
		if err != nil {
			return nil, err
		}
		it.Resource = compactValue(it.Resource, convert)
		return appendIntent(nil, it, in)
	})
	if err != nil {
		return err
	}
	err = rebuild(tx, bucketHistory, func(k, v []byte) ([]byte, error) {
		i := bytes.IndexByte(k, 0)
		if i < 0 || len(k) != i+9 {
			return nil, corrupt(string(k), "bad history key")
		}
		addr := string(k[:i])
		e, err := decodeHistory(v, addr, binary.BigEndian.Uint64(k[i+1:]), nil)
		if err != nil {
			return nil, err
		}
		var prior []byte
		if e.Prior != nil {
			if prior, err = appendResource(nil, compactValue(e.Prior, convert), addr, in); err != nil {
				return nil, err
			}
		}
		return encodeHistory(e.Time, e.Action, e.Peer, prior), nil
	})
	if err != nil {
		return err
	}
	return tx.Bucket(bucketMeta).Put(keyVersion, u64(3))
}

// upgradeSeal turns a format-3 file (or an older one converted to it) into
// format 4 in the writer's opening transaction: every record is decoded
// first (a damaged one stops the upgrade rather than getting a checksum
// that vouches for it), then every value of the sealed buckets is sealed.
// The interned bucket keeps its ids and its sequence.
func upgradeSeal(tx *bolt.Tx) error {
	if _, err := readResources(tx); err != nil {
		return err
	}
	if _, err := readIntents(tx); err != nil {
		return err
	}
	for _, name := range sealedBuckets {
		seq := tx.Bucket(name).Sequence()
		err := rebuild(tx, name, func(k, v []byte) ([]byte, error) { return seal(k, v), nil })
		if err != nil {
			return err
		}
		if err := tx.Bucket(name).SetSequence(seq); err != nil {
			return err
		}
	}
	if err := countAll(tx); err != nil {
		return err
	}
	return tx.Bucket(bucketMeta).Put(keyVersion, u64(sealedVersion))
}

// rebuild replaces bucket name with one holding conv of each record,
// written in key order with full pages.
func rebuild(tx *bolt.Tx, name []byte, conv func(k, v []byte) ([]byte, error)) error {
	type kv struct{ k, v []byte }
	var all []kv
	err := tx.Bucket(name).ForEach(func(k, v []byte) error {
		nv, err := conv(k, v)
		if err != nil {
			return err
		}
		all = append(all, kv{bytes.Clone(k), nv})
		return nil
	})
	if err != nil {
		return err
	}
	if err := tx.DeleteBucket(name); err != nil {
		return err
	}
	b, err := tx.CreateBucket(name)
	if err != nil {
		return err
	}
	b.FillPercent = 1
	for _, e := range all {
		if err := b.Put(e.k, e.v); err != nil {
			return err
		}
	}
	return nil
}
