package state

import (
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Output is one stored output value (encoding chosen by the engine).
type Output struct {
	Value     json.RawMessage `json:"value"`
	Sensitive bool            `json:"sensitive,omitempty"`
}

// keyOutputs holds every output, in the meta bucket: outputs are few and
// always written together after an apply.
var keyOutputs = []byte("outputs")

// PutOutputs replaces every stored output (an empty map clears them).
func (s *BoltStore) PutOutputs(outs map[string]Output) error {
	if s.readOnly {
		return ErrReadOnly
	}
	data, err := json.Marshal(outs)
	if err != nil {
		return fmt.Errorf("%w: outputs: %v", ErrInvalid, err)
	}
	return s.submit(func(tx *bolt.Tx, _ *commitCtx) error {
		return tx.Bucket(bucketMeta).Put(keyOutputs, data)
	})
}

// Outputs returns every stored output.
func (s *BoltStore) Outputs() (map[string]Output, error) {
	var out map[string]Output
	err := s.view(func(tx *bolt.Tx) (err error) {
		if err := checkMeta(tx, s.path); err != nil {
			return err
		}
		out, err = readOutputs(tx)
		return err
	})
	return out, err
}

func readOutputs(tx *bolt.Tx) (map[string]Output, error) {
	out := map[string]Output{}
	v := tx.Bucket(bucketMeta).Get(keyOutputs)
	if v == nil {
		return out, nil
	}
	if err := decode(v, &out, "the outputs"); err != nil {
		return nil, err
	}
	return out, nil
}
