package state

import (
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Replace makes the state exactly p in one transaction (see Store.Replace).
func (s *BoltStore) Replace(p *Portable) error {
	if p == nil || p.Lineage == "" {
		return fmt.Errorf("%w: replace with a snapshot that has no lineage", ErrInvalid)
	}
	recs := make(map[string][]byte, len(p.Resources))
	for _, r := range p.Resources {
		if err := checkResource(r); err != nil {
			return err
		}
		data, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("%w: resource %s: %v", ErrInvalid, r.Address, err)
		}
		recs[r.Address] = data
	}
	outs, err := json.Marshal(p.Outputs)
	if err != nil {
		return fmt.Errorf("%w: outputs: %v", ErrInvalid, err)
	}
	return s.submit(func(tx *bolt.Tx, c *commitCtx) error {
		for _, name := range [][]byte{bucketResources, bucketJournal, bucketHistory} {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		b := tx.Bucket(bucketResources)
		for addr, data := range recs {
			if err := b.Put([]byte(addr), data); err != nil {
				return err
			}
		}
		m := tx.Bucket(bucketMeta)
		if err := m.Put(keyLineage, []byte(p.Lineage)); err != nil {
			return err
		}
		if err := m.Put(keyOutputs, outs); err != nil {
			return err
		}
		c.serial = p.Serial // commit stores it
		return m.Put(keySerial, u64(p.Serial))
	})
}
