package plugin

import (
	"bytes"
	"sync"
)

// ring keeps the last max bytes written to it: a plugin's stderr tail for
// crash diagnostics, without holding a chatty plugin's whole log.
type ring struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newRing(max int) *ring { return &ring{max: max, buf: make([]byte, 0, max)} }

func (r *ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(p)
	if len(p) >= r.max {
		p = p[len(p)-r.max:]
		r.buf = r.buf[:0]
	}
	if over := len(r.buf) + len(p) - r.max; over > 0 {
		r.buf = append(r.buf[:0], r.buf[over:]...)
	}
	r.buf = append(r.buf, p...)
	return n, nil
}

// Tail returns what is kept, starting at a line boundary when the buffer
// has wrapped so the first line is not a fragment.
func (r *ring) Tail() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.buf
	if len(b) == r.max {
		if i := bytes.IndexByte(b, '\n'); i >= 0 && i < len(b)-1 {
			b = b[i+1:]
		}
	}
	return string(bytes.TrimRight(b, "\n"))
}

// lineLogger writes each complete line it is given to log; go-plugin
// hands the plugin's redirected os.Stderr over in arbitrary chunks.
type lineLogger struct {
	mu   sync.Mutex
	part []byte
	log  func(line string)
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.part = append(l.part, p...)
	for {
		i := bytes.IndexByte(l.part, '\n')
		if i < 0 {
			break
		}
		l.log(string(l.part[:i]))
		l.part = l.part[i+1:]
	}
	if len(l.part) > 64<<10 { // a runaway line: log what there is
		l.log(string(l.part))
		l.part = nil
	}
	return len(p), nil
}
