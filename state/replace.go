package state

import (
	"encoding/json"
	"fmt"
	"sort"

	bolt "go.etcd.io/bbolt"
)

// Replace makes the state exactly p in one transaction (see Store.Replace).
func (s *BoltStore) Replace(p *Portable) error {
	if p == nil || p.Lineage == "" {
		return fmt.Errorf("%w: replace with a snapshot that has no lineage", ErrInvalid)
	}
	recs := make([]*Resource, 0, len(p.Resources))
	for _, r := range p.Resources {
		if err := checkResource(r); err != nil {
			return err
		}
		rec := *compactValue(r, s.convert)
		if rec.Status == "" {
			rec.Status = StatusReady
		}
		recs = append(recs, &rec)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Address < recs[j].Address })
	outs, err := json.Marshal(p.Outputs)
	if err != nil {
		return fmt.Errorf("%w: outputs: %v", ErrInvalid, err)
	}
	return s.submit(func(tx *bolt.Tx, c *commitCtx) error {
		for _, name := range [][]byte{bucketResources, bucketJournal, bucketHistory, bucketInterned} {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		c.in, c.recount = newInterner(tx), true
		b := tx.Bucket(bucketResources)
		b.FillPercent = 1 // written in key order
		for _, r := range recs {
			data, err := appendResource(nil, r, r.Address, c.in)
			if err != nil {
				return err
			}
			key := []byte(r.Address)
			if err := b.Put(key, seal(key, data)); err != nil {
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
