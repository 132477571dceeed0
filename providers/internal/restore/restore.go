package restore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/sparkform/sparkform/providers/node"
)

// ErrBadRecord is a field or value that a record cannot hold.
var ErrBadRecord = errors.New("restore: invalid record field")

// Record is a restore record: field -> values, in the order written.
type Record map[string][]string

// First returns the first value of field ("" when absent).
func (r Record) First(field string) string {
	if v := r[field]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Has reports whether field has value v.
func (r Record) Has(field, v string) bool {
	for _, x := range r[field] {
		if x == v {
			return true
		}
	}
	return false
}

// Text renders r as record lines, fields sorted, values in order.
func (r Record) Text() (string, error) {
	fields := make([]string, 0, len(r))
	for f := range r {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	var b strings.Builder
	for _, f := range fields {
		if f == "" || strings.ContainsAny(f, " \n\x00") {
			return "", fmt.Errorf("%w: field %q", ErrBadRecord, f)
		}
		for _, v := range r[f] {
			if strings.ContainsAny(v, "\n\x00") {
				return "", fmt.Errorf("%w: %s value holds a newline or NUL", ErrBadRecord, f)
			}
			b.WriteString(f + " " + v + "\n")
		}
	}
	return b.String(), nil
}

// Parse reads record lines; lines it cannot read are skipped.
func Parse(text string) Record {
	r := Record{}
	for _, line := range strings.Split(text, "\n") {
		f, v, ok := strings.Cut(line, " ")
		if !ok || f == "" {
			continue
		}
		r[f] = append(r[f], v)
	}
	return r
}

// Store is the records of one kind ("kmod_module", "gitkit_checkout", ...)
// on the nodes a provider reaches.
type Store struct {
	// Kind names the record folder; a resource type name.
	Kind string
	// Dir, when set, replaces the default base folder (tests keep their
	// records apart with it); records go to Dir/restore/KIND.
	Dir string
}

// Name is the file name of the record for key.
func (s Store) Name(key string) string {
	sum := sha256.Sum256([]byte(s.Kind + "\x00" + key))
	return hex.EncodeToString(sum[:16])
}

// Run runs script after Prelude as one remote command; in it $1 is the
// base folder argument and $2 the kind (pass them to the sf_r functions),
// then args. A provider uses it to fold its own checks into the record
// write.
func (s Store) Run(ctx context.Context, conn node.Conn, become bool, script string, args ...string) (string, error) {
	return s.run(ctx, conn, become, script, args...)
}

func (s Store) run(ctx context.Context, conn node.Conn, become bool, script string, args ...string) (string, error) {
	argv := append([]string{"sh", "-c", Prelude + "\n" + script, "sh", s.Dir, s.Kind}, args...)
	res, err := conn.Run(ctx, node.Cmd{Argv: argv, Become: become})
	if err != nil {
		var ee *node.ExitError
		if errors.As(err, &ee) && strings.TrimSpace(ee.Stderr) != "" {
			return "", fmt.Errorf("restore record on %s: %s", conn.Name(), strings.TrimSpace(ee.Stderr))
		}
		return "", fmt.Errorf("restore record on %s: %w", conn.Name(), err)
	}
	return string(res.Stdout), nil
}

// Split parses the output of a script that ends with sf_rcat: what it
// printed before, and the record (nil when there is none).
func Split(out string) (before string, rec Record) {
	if strings.HasPrefix(out, "record\n") {
		return "", Parse(strings.TrimPrefix(out, "record\n"))
	}
	if i := strings.Index(out, "\nrecord\n"); i >= 0 {
		return out[:i+1], Parse(out[i+len("\nrecord\n"):])
	}
	return out, nil
}

// Get returns the record for key, and whether there is one.
func (s Store) Get(ctx context.Context, conn node.Conn, become bool, key string) (Record, bool, error) {
	out, err := s.run(ctx, conn, become, `sf_rcat "$1" "$2" "$3"`, s.Name(key))
	if err != nil {
		return nil, false, err
	}
	if !strings.HasPrefix(out, "record\n") {
		return nil, false, nil
	}
	return Parse(strings.TrimPrefix(out, "record\n")), true, nil
}

// Create writes rec as the record for key unless one exists, and returns
// the record now on the node: rec, or the earlier one (first wins). The
// record is durable when Create returns.
func (s Store) Create(ctx context.Context, conn node.Conn, become bool, key string, rec Record) (Record, error) {
	full := Record{}
	for f, v := range rec {
		full[f] = v
	}
	full["key"] = []string{key}
	text, err := full.Text()
	if err != nil {
		return nil, err
	}
	out, err := s.run(ctx, conn, become, `sf_rcreate "$1" "$2" "$3" "$4" && sf_rcat "$1" "$2" "$3"`, s.Name(key), text)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(out, "record\n") {
		return nil, fmt.Errorf("restore record on %s: not there after writing it (output %q)", conn.Name(), out)
	}
	return Parse(strings.TrimPrefix(out, "record\n")), nil
}

// Append adds field values to the record for key (creating it with the
// key when missing); durable when it returns.
func (s Store) Append(ctx context.Context, conn node.Conn, become bool, key string, add Record) error {
	text, err := add.Text()
	if err != nil {
		return err
	}
	keyLine, _ := Record{"key": {key}}.Text()
	_, err = s.run(ctx, conn, become, `sf_rcreate "$1" "$2" "$3" "$4" && sf_rappend "$1" "$2" "$3" "$5"`, s.Name(key), keyLine, text)
	return err
}

// Remove deletes the record for key (no error when there is none) and the
// record folders that are left empty.
func (s Store) Remove(ctx context.Context, conn node.Conn, become bool, key string) error {
	_, err := s.run(ctx, conn, become, `sf_rrm "$1" "$2" "$3"`, s.Name(key))
	return err
}
