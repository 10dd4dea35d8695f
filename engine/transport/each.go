package transport

import (
	"io"
	"sync"
)

// eachReader is a body that hands each read's bytes to fn instead of
// copying them into a caller's buffer (see h1Body.readEach): nil at the
// body's end, fn's error or the read's otherwise.
type eachReader interface {
	readEach(bufs *sync.Pool, fn func(p []byte) error) error
}

// readEach reads r to its end, handing fn the bytes of each read: through
// r's own readEach where it has one, else with Read into a buffer from
// bufs. fn's bytes are valid until it returns.
func readEach(r io.Reader, bufs *sync.Pool, fn func(p []byte) error) error {
	if er, ok := r.(eachReader); ok {
		return er.readEach(bufs, fn)
	}
	return readLoop(r, bufs, fn)
}

// readLoop is readEach through Read.
func readLoop(r io.Reader, bufs *sync.Pool, fn func(p []byte) error) error {
	bp := bufs.Get().(*[]byte)
	defer bufs.Put(bp)
	for {
		n, err := r.Read(*bp)
		if n > 0 {
			if ferr := fn((*bp)[:n]); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// readEach applies the hints at the body's end, as Read does at io.EOF.
func (b *hintBody) readEach(bufs *sync.Pool, fn func(p []byte) error) error {
	err := readEach(b.ReadCloser, bufs, fn)
	if err == nil && b.done.CompareAndSwap(false, true) {
		b.conn.released()
	}
	return err
}
