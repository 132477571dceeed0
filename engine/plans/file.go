package plans

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/zclconf/go-cty/cty"
	ctymsgpack "github.com/zclconf/go-cty/cty/msgpack"

	"github.com/sparkform/sparkform/internal/atomicfile"
	"github.com/sparkform/sparkform/providers/sdk"
)

// FormatVersion is the plan file format written by this version.
const FormatVersion = 1

var (
	// ErrStalePlan is returned when a plan file was made against another
	// state than the one it is applied to.
	ErrStalePlan = errors.New("saved plan is stale")
	// ErrNotPlanFile is returned for a file that is not a sparkform plan.
	ErrNotPlanFile = errors.New("not a sparkform plan file")
)

const magic = "sparkform-plan\n"

type fileValue []byte

func encodeValue(v cty.Value) (fileValue, error) {
	if v == cty.NilVal {
		return nil, nil
	}
	v, _ = v.UnmarkDeep()
	return ctymsgpack.Marshal(v, cty.DynamicPseudoType)
}

func decodeValue(b fileValue) (cty.Value, error) {
	if b == nil {
		return cty.NilVal, nil
	}
	if err := sdk.CheckMsgpack(b); err != nil {
		return cty.NilVal, err
	}
	return ctymsgpack.Unmarshal(b, cty.DynamicPseudoType)
}

type fileChange struct {
	Addr, Resource, Type, Provider string
	Node, PriorNode                sdk.Node
	Action                         Action
	Reason                         string
	Notes                          []string
	Before, After                  fileValue
	RequiresReplace                [][]string
	PriorPrivate, PlannedPrivate   []byte
	Dependencies                   []string
	SensitiveAttrs, SummaryAttrs   []string
	PriorSensitiveAttrs            []string
	SchemaVersion                  int64
	CreateBeforeDestroy            bool
}

type fileDrift struct {
	Addr, Type     string
	Before, After  fileValue
	SensitiveAttrs []string
	SummaryAttrs   []string `json:",omitempty"`
}

type fileOutput struct {
	Before, After fileValue
	Sensitive     bool
}

type filePlan struct {
	FormatVersion int
	Lineage       string
	Serial        uint64
	Mode          Mode
	Created       time.Time
	ConfigDigest  string
	Variables     map[string]fileValue
	Targets       []string
	Replace       []string
	Changes       []fileChange
	Drift         []fileDrift
	Moves         []Move `json:",omitempty"`
	Outputs       map[string]fileOutput
	Notes         []string
	// ExcludeUnreachable and Excluded: see Plan.
	ExcludeUnreachable bool           `json:",omitempty"`
	Excluded           []ExcludedNode `json:",omitempty"`
}

// maxPlanBytes bounds a plan file's unpacked size (a 10,000-instance
// plan is a few MB): a crafted gzip stream cannot fill memory. A variable
// so the test can use a small bound.
var maxPlanBytes int64 = 256 << 20

// pathToStrings keeps only attribute steps and string/int keys, which is
// all a RequiresReplace path uses.
func pathToStrings(p cty.Path) []string {
	out := make([]string, 0, len(p))
	for _, s := range p {
		switch s := s.(type) {
		case cty.GetAttrStep:
			out = append(out, "."+s.Name)
		case cty.IndexStep:
			if s.Key.Type() == cty.String {
				out = append(out, "["+s.Key.AsString())
			} else if s.Key.Type() == cty.Number {
				out = append(out, "#"+s.Key.AsBigFloat().Text('f', 0))
			}
		}
	}
	return out
}

// stringsToPath is the inverse of pathToStrings. The elements come from a
// file, so anything pathToStrings does not write is an error.
func stringsToPath(ss []string) (cty.Path, error) {
	var p cty.Path
	for _, s := range ss {
		if s == "" {
			return nil, fmt.Errorf("empty replace-path element")
		}
		switch s[0] {
		case '.':
			if len(s) == 1 {
				return nil, fmt.Errorf("replace-path element %q names no attribute", s)
			}
			p = p.GetAttr(s[1:])
		case '[':
			p = p.Index(cty.StringVal(s[1:]))
		case '#':
			n, err := cty.ParseNumberVal(s[1:])
			if err != nil || !n.AsBigFloat().IsInt() {
				return nil, fmt.Errorf("replace-path element %q is not a whole-number index", s)
			}
			p = p.Index(n)
		default:
			return nil, fmt.Errorf("replace-path element %q is not an attribute or index step", s)
		}
	}
	return p, nil
}

// Write writes p to w.
func Write(w io.Writer, p *Plan) error {
	fp := filePlan{
		FormatVersion: FormatVersion, Lineage: p.Lineage, Serial: p.Serial, Mode: p.Mode,
		Created: p.Created, ConfigDigest: p.ConfigDigest, Targets: p.Targets, Replace: p.Replace,
		Variables: map[string]fileValue{}, Outputs: map[string]fileOutput{}, Notes: p.Notes, Moves: p.Moves,
		ExcludeUnreachable: p.ExcludeUnreachable, Excluded: p.Excluded,
	}
	var err error
	enc := func(v cty.Value) fileValue {
		b, e := encodeValue(v)
		if e != nil && err == nil {
			err = e
		}
		return b
	}
	for k, v := range p.Variables {
		fp.Variables[k] = enc(v)
	}
	for _, c := range p.Changes {
		fc := fileChange{
			Addr: c.Addr, Resource: c.Resource, Type: c.Type, Provider: c.Provider, Node: NodeValue(c.Node), PriorNode: NodeValue(c.PriorNode),
			Action: c.Action, Reason: c.Reason, Notes: c.Notes, Before: enc(c.Before), After: enc(c.After),
			PriorPrivate: c.PriorPrivate, PlannedPrivate: c.PlannedPrivate,
			Dependencies: c.Dependencies, SensitiveAttrs: c.SensitiveAttrs, SummaryAttrs: c.SummaryAttrs, PriorSensitiveAttrs: c.PriorSensitiveAttrs,
			SchemaVersion: c.SchemaVersion, CreateBeforeDestroy: c.CreateBeforeDestroy,
		}
		for _, rp := range c.RequiresReplace {
			fc.RequiresReplace = append(fc.RequiresReplace, pathToStrings(rp))
		}
		fp.Changes = append(fp.Changes, fc)
	}
	for _, d := range p.Drift {
		fp.Drift = append(fp.Drift, fileDrift{Addr: d.Addr, Type: d.Type, Before: enc(d.Before), After: enc(d.After), SensitiveAttrs: d.SensitiveAttrs, SummaryAttrs: d.SummaryAttrs})
	}
	for k, o := range p.Outputs {
		fp.Outputs[k] = fileOutput{Before: enc(o.Before), After: enc(o.After), Sensitive: o.Sensitive}
	}
	if err != nil {
		return fmt.Errorf("encoding plan: %w", err)
	}
	if _, err := io.WriteString(w, magic); err != nil {
		return err
	}
	zw := gzip.NewWriter(w)
	if err := json.NewEncoder(zw).Encode(&fp); err != nil {
		return err
	}
	return zw.Close()
}

// Read reads a plan written by Write.
//
// The gzip stream is first unpacked into nothing, counting, and only
// decoded when it stays within maxPlanBytes: a bomb (a few hundred KB
// that unpack to gigabytes) is refused in constant memory, never after
// the JSON decoder has buffered what it unpacked.
func Read(r io.Reader) (*Plan, error) {
	head := make([]byte, len(magic))
	if _, err := io.ReadFull(r, head); err != nil || string(head) != magic {
		return nil, ErrNotPlanFile
	}
	packed, err := io.ReadAll(io.LimitReader(r, maxPlanBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(packed)) > maxPlanBytes {
		return nil, fmt.Errorf("%w: it is larger than %d bytes", ErrNotPlanFile, maxPlanBytes)
	}
	zr, err := gzip.NewReader(bytes.NewReader(packed))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotPlanFile, err)
	}
	n, err := io.Copy(io.Discard, io.LimitReader(zr, maxPlanBytes+1))
	switch {
	case n > maxPlanBytes:
		return nil, fmt.Errorf("%w: it unpacks to more than %d bytes", ErrNotPlanFile, maxPlanBytes)
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrNotPlanFile, err)
	}
	if err := zr.Reset(bytes.NewReader(packed)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotPlanFile, err)
	}
	var fp filePlan
	if err := json.NewDecoder(zr).Decode(&fp); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotPlanFile, err)
	}
	if fp.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("plan file format %d is not supported by this sparkform (format %d); make a new plan", fp.FormatVersion, FormatVersion)
	}
	if err := fp.check(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotPlanFile, err)
	}
	p := &Plan{
		FormatVersion: fp.FormatVersion, Lineage: fp.Lineage, Serial: fp.Serial, Mode: fp.Mode,
		Created: fp.Created, ConfigDigest: fp.ConfigDigest, Targets: fp.Targets, Replace: fp.Replace,
		Variables: map[string]cty.Value{}, Outputs: map[string]*OutputChange{}, Notes: fp.Notes, Moves: fp.Moves,
		ExcludeUnreachable: fp.ExcludeUnreachable, Excluded: fp.Excluded,
	}
	dec := func(b fileValue) cty.Value {
		v, e := decodeValue(b)
		if e != nil && err == nil {
			err = e
		}
		return v
	}
	for k, v := range fp.Variables {
		p.Variables[k] = dec(v)
	}
	for _, fc := range fp.Changes {
		c := &ResourceChange{
			Addr: fc.Addr, Resource: fc.Resource, Type: fc.Type, Provider: fc.Provider, Node: p.Node(fc.Node), PriorNode: p.Node(fc.PriorNode),
			Action: fc.Action, Reason: fc.Reason, Notes: fc.Notes, Before: dec(fc.Before), After: dec(fc.After),
			PriorPrivate: fc.PriorPrivate, PlannedPrivate: fc.PlannedPrivate,
			Dependencies: fc.Dependencies, SensitiveAttrs: fc.SensitiveAttrs, SummaryAttrs: fc.SummaryAttrs, PriorSensitiveAttrs: fc.PriorSensitiveAttrs,
			SchemaVersion: fc.SchemaVersion, CreateBeforeDestroy: fc.CreateBeforeDestroy,
		}
		for _, rp := range fc.RequiresReplace {
			path, e := stringsToPath(rp)
			if e != nil && err == nil {
				err = fmt.Errorf("%s: %v", fc.Addr, e)
			}
			c.RequiresReplace = append(c.RequiresReplace, path)
		}
		p.Changes = append(p.Changes, c)
	}
	for _, d := range fp.Drift {
		p.Drift = append(p.Drift, &Drift{Addr: d.Addr, Type: d.Type, Before: dec(d.Before), After: dec(d.After), SensitiveAttrs: d.SensitiveAttrs, SummaryAttrs: d.SummaryAttrs})
	}
	for k, o := range fp.Outputs {
		p.Outputs[k] = &OutputChange{Before: dec(o.Before), After: dec(o.After), Sensitive: o.Sensitive}
	}
	if err == nil {
		err = p.checkValues()
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotPlanFile, err)
	}
	return p, nil
}

// WriteFile writes p to path with mode 0600 (plans can hold sensitive
// values and private data). A regular file is written beside path and
// renamed over it, so an existing file's wider mode, or a reader holding
// it open, never sees the new plan; path is whole or unchanged. Anything
// else (a pipe, /dev/stdout) is written in place.
func WriteFile(path string, p *Plan) error {
	var buf bytes.Buffer
	if err := Write(&buf, p); err != nil {
		return err
	}
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return os.WriteFile(path, buf.Bytes(), 0o600)
	}
	// A temp sibling, fsync, rename; 0600 whatever the umask.
	return atomicfile.Write(path, buf.Bytes(), 0o600)
}

// ReadFile reads a plan file. Anything but a regular file (a FIFO, a
// device, a directory) is refused at once: it is opened without blocking
// and checked before a byte is read, so a FIFO nobody writes to cannot
// hang show or apply.
func ReadFile(path string) (*Plan, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: it is %s, not a regular file", ErrNotPlanFile, fileKind(fi.Mode()))
	}
	p, err := Read(f)
	if p != nil {
		p.Saved = true
	}
	return p, err
}

// fileKind names what a non-regular file is, for the refusal.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}

// CheckFresh returns ErrStalePlan (wrapped, with what moved) unless the
// state is still the one the plan was made against. A plan without a
// lineage was made before any state existed (Read allows that only at
// serial 0): it applies to a state never written, whatever its lineage.
func (p *Plan) CheckFresh(lineage string, serial uint64) error {
	if p.Lineage != "" && p.Lineage != lineage {
		return fmt.Errorf("%w: it was made for state lineage %s, but the state is now lineage %q; run plan again", ErrStalePlan, p.Lineage, lineage)
	}
	if p.Serial != serial {
		return fmt.Errorf("%w: the state changed since the plan was made (serial %d, now %d); run plan again", ErrStalePlan, p.Serial, serial)
	}
	return nil
}
