// Package iox holds small io helpers shared by the renderers.
package iox

import "io"

// ErrWriter keeps the first write error, so a writer formats freely with
// fmt.Fprintf and reports the failure once, at the end (Err). After an
// error every Write fails with it.
type ErrWriter struct {
	w   io.Writer
	err error
}

// NewErrWriter wraps w.
func NewErrWriter(w io.Writer) *ErrWriter { return &ErrWriter{w: w} }

func (e *ErrWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	if err != nil {
		e.err = err
	}
	return n, err
}

// Err is the first write error, or nil.
func (e *ErrWriter) Err() error { return e.err }
