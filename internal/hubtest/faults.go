package hubtest

import (
	"io"
	"net/http"
	"time"
)

// corruptReader changes the byte at offset at of the content it reads.
type corruptReader struct {
	io.ReadSeeker
	pos, at int64
}

func (c *corruptReader) Read(p []byte) (int, error) {
	n, err := c.ReadSeeker.Read(p)
	if i := c.at - c.pos; i >= 0 && i < int64(n) {
		p[i] ^= 0x5a
	}
	c.pos += int64(n)
	return n, err
}

func (c *corruptReader) Seek(off int64, whence int) (int64, error) {
	n, err := c.ReadSeeker.Seek(off, whence)
	if err == nil {
		c.pos = n
	}
	return n, err
}

// faultWriter counts body bytes, throttles them and cuts the connection
// mid-body when the test asked for it.
type faultWriter struct {
	http.ResponseWriter
	s      *Server
	path   string
	rate   int64 // bytes/s, 0 = unlimited
	cutAt  int64 // body bytes before the cut, -1 = none
	start  time.Time
	n      int64
	status int
}

func (w *faultWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *faultWriter) statusCode() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// Unwrap lets http.ResponseController reach the real writer.
func (w *faultWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *faultWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	written := 0
	for len(p) > 0 {
		chunk := p
		if w.cutAt >= 0 && w.n+int64(len(chunk)) > w.cutAt {
			chunk = chunk[:w.cutAt-w.n]
		}
		if w.rate > 0 {
			// Small slices so the rate holds within a response, not only on average.
			if lim := int(w.rate/20) + 1; len(chunk) > lim {
				chunk = chunk[:lim]
			}
		}
		if len(chunk) > 0 {
			// Counted before the write: a client may hold the bytes (and a
			// test read the counters) before Write returns here.
			w.s.addBytes(w.path, int64(len(chunk)))
			m, err := w.ResponseWriter.Write(chunk)
			w.n += int64(m)
			written += m
			if m < len(chunk) {
				w.s.addBytes(w.path, int64(m-len(chunk)))
			}
			if err != nil {
				return written, err
			}
			p = p[m:]
		}
		if w.rate > 0 {
			due := w.start.Add(time.Duration(float64(w.n) / float64(w.rate) * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			}
		}
		if w.cutAt >= 0 && w.n >= w.cutAt {
			// Send what was promised, then drop the connection mid-body: the
			// client sees a short read (curl exit 18), as with a network cut.
			_ = http.NewResponseController(w.ResponseWriter).Flush()
			panic(http.ErrAbortHandler)
		}
	}
	return written, nil
}
