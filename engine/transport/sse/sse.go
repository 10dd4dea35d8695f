// Package sse is an incremental parser for text/event-stream bodies, built for
// the measurement hot path: bytes are fed as they arrive from the network, each
// dispatched event carries the arrival time of the read that completed it, and
// no allocation happens per event once the internal buffers have grown.
//
// It follows the WHATWG event-stream rules that matter for LLM servers: LF, CR
// and CRLF line endings (a CRLF split across two reads is one line ending),
// "data:" with or without the single leading space, multi-line data joined with
// "\n", the "event:" field, ":" comment lines (keep-alives) and blank-line
// dispatch. "id:" and "retry:" are accepted and ignored.
package sse

import (
	"bytes"
	"errors"
	"fmt"
	"time"
)

// DefaultMaxLineBytes caps one line (and one event's joined data) when the
// caller passes 0, so a misbehaving server cannot grow memory without bound.
const DefaultMaxLineBytes = 4 << 20

// Event is one dispatched server-sent event.
//
// Name and Data alias the parser's internal buffers: they are valid only during
// the emit callback. Copy them to keep them.
type Event struct {
	// Name is the "event:" field; empty means the default "message".
	Name []byte
	// Data is the joined "data:" lines, without the trailing newline.
	Data []byte
	// At is the caller's timestamp for the read that completed this event.
	At time.Duration
	// Done reports that Data is exactly "[DONE]" (the OpenAI end marker).
	Done bool
}

// LimitError reports a line or an event's data longer than the parser allows.
type LimitError struct {
	// What is "line" or "event data".
	What string
	// LimitBytes is the configured cap.
	LimitBytes int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("sse: %s exceeds the %d-byte limit", e.What, e.LimitBytes)
}

// Parser is an incremental event-stream parser. The zero value is not ready;
// use NewParser. A Parser is not safe for concurrent use.
type Parser struct {
	maxLine int

	line  []byte // partial line carried over between Feed calls
	data  []byte // data buffer of the event being built
	name  []byte // event-type buffer of the event being built
	has   bool   // a data field was seen for the event being built
	cr    bool   // last byte fed was CR: a leading LF in the next chunk ends nothing
	begun bool   // the start is decided (BOM stripping applies to the very start only)
	bomN  int    // bytes of a BOM matched so far, when a read splits it

	ev Event

	comments int
}

// NewParser returns a parser whose lines and event data are capped at
// maxLineBytes (DefaultMaxLineBytes when maxLineBytes <= 0).
func NewParser(maxLineBytes int) *Parser {
	if maxLineBytes <= 0 {
		maxLineBytes = DefaultMaxLineBytes
	}
	// An LLM server's chunk is one to a few hundred bytes of data: room for
	// one at the start, where appending from nothing grew it six times.
	return &Parser{maxLine: maxLineBytes, data: make([]byte, 0, firstDataBytes)}
}

// firstDataBytes is the room a Parser's event data starts with.
const firstDataBytes = 256

// Reset clears all state so the parser can read a new stream, keeping buffers.
func (p *Parser) Reset() {
	p.line = p.line[:0]
	p.data = p.data[:0]
	p.name = p.name[:0]
	p.has, p.cr, p.begun, p.bomN = false, false, false, 0
	p.comments = 0
}

// Comments is the number of comment (keep-alive) lines seen.
func (p *Parser) Comments() int { return p.comments }

var bom = []byte{0xEF, 0xBB, 0xBF}

// Feed parses chunk, calling emit for each event it completes; at is the
// caller's arrival time for chunk, taken before calling Feed. An error from
// emit stops parsing and is returned unchanged; a *LimitError reports an
// oversized line. After an error the parser must be Reset before reuse.
func (p *Parser) Feed(chunk []byte, at time.Duration, emit func(*Event) error) error {
	if len(chunk) == 0 {
		return nil
	}
	if !p.begun {
		// A BOM may arrive split across reads: match it byte by byte.
		for len(chunk) > 0 && p.bomN < len(bom) {
			if chunk[0] != bom[p.bomN] {
				// Not a BOM after all: the bytes held back are data.
				if p.bomN > 0 {
					chunk = append(append([]byte{}, bom[:p.bomN]...), chunk...)
				}
				p.bomN = len(bom)
				break
			}
			p.bomN++
			chunk = chunk[1:]
		}
		if p.bomN < len(bom) {
			return nil // a BOM prefix so far; wait for more
		}
		p.begun = true
	}
	if p.cr {
		p.cr = false
		if len(chunk) > 0 && chunk[0] == '\n' {
			chunk = chunk[1:]
		}
	}
	for len(chunk) > 0 {
		end, next := lineEnd(chunk)
		if end < 0 {
			// No line ending yet: carry the partial line over.
			if len(p.line)+len(chunk) > p.maxLine {
				return &LimitError{What: "line", LimitBytes: p.maxLine}
			}
			if p.line == nil {
				// Room for a chunk's line at once, not six appends that
				// grow it from nothing.
				p.line = make([]byte, 0, max(firstDataBytes, len(chunk)))
			}
			p.line = append(p.line, chunk...)
			return nil
		}
		if next > len(chunk) {
			// Chunk ended on CR: the LF (if any) is in the next read.
			p.cr = true
			next = len(chunk)
		}
		seg := chunk[:end]
		chunk = chunk[next:]
		if len(p.line) > 0 {
			if len(p.line)+len(seg) > p.maxLine {
				return &LimitError{What: "line", LimitBytes: p.maxLine}
			}
			p.line = append(p.line, seg...)
			seg = p.line
		} else if len(seg) > p.maxLine {
			return &LimitError{What: "line", LimitBytes: p.maxLine}
		}
		err := p.processLine(seg, at, emit)
		p.line = p.line[:0]
		if err != nil {
			return err
		}
	}
	return nil
}

// Flush ends the stream: a trailing line without a line ending is processed and
// a pending event is dispatched. The spec discards such an event, but servers
// that close right after "data: [DONE]" without a blank line exist, and the
// end marker matters more than strictness here. When the event of a trailing
// line without its ending cannot be read, the stream was cut inside that
// line: the error wraps ErrCut.
func (p *Parser) Flush(at time.Duration, emit func(*Event) error) error {
	if n := len(p.line); n > 0 {
		err := p.processLine(p.line, at, emit)
		p.line = p.line[:0]
		if err == nil {
			err = p.dispatch(at, emit)
		}
		if err != nil {
			return fmt.Errorf("%w (%d bytes after the last line ending): %w", ErrCut, n, err)
		}
		return nil
	}
	return p.dispatch(at, emit)
}

// ErrCut marks a stream that ended inside a line whose event could not be
// read: the server closed after the data had started, mid-event.
var ErrCut = errors.New("the stream ended inside a line")

// lineEnd finds the first line ending in b: end is where the line stops and
// next where the following line starts. next == len(b)+1 means b ends with a
// lone CR whose LF may still come. end < 0 means no line ending in b.
func lineEnd(b []byte) (end, next int) {
	lf := bytes.IndexByte(b, '\n')
	search := b
	if lf >= 0 {
		search = b[:lf]
	}
	// CR-only endings are rare; IndexByte over the line is cheap next to
	// a per-byte loop.
	if cr := bytes.IndexByte(search, '\r'); cr >= 0 {
		if cr+1 < len(b) {
			if b[cr+1] == '\n' {
				return cr, cr + 2
			}
			return cr, cr + 1
		}
		return cr, len(b) + 1
	}
	if lf >= 0 {
		return lf, lf + 1
	}
	return -1, 0
}

var (
	fieldData  = []byte("data")
	fieldEvent = []byte("event")
	doneMarker = []byte("[DONE]")
)

func (p *Parser) processLine(line []byte, at time.Duration, emit func(*Event) error) error {
	if len(line) == 0 {
		return p.dispatch(at, emit)
	}
	if line[0] == ':' {
		p.comments++
		return nil
	}
	var field, value []byte
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		field, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	} else {
		field = line
	}
	switch {
	case bytes.Equal(field, fieldData):
		n := len(p.data) + len(value)
		if p.has {
			n++
		}
		if n > p.maxLine {
			return &LimitError{What: "event data", LimitBytes: p.maxLine}
		}
		if p.has {
			p.data = append(p.data, '\n')
		}
		p.data = append(p.data, value...)
		p.has = true
	case bytes.Equal(field, fieldEvent):
		p.name = append(p.name[:0], value...)
	}
	return nil
}

func (p *Parser) dispatch(at time.Duration, emit func(*Event) error) error {
	if !p.has {
		// Spec: a blank line with no data resets the event type, no dispatch.
		p.name = p.name[:0]
		return nil
	}
	p.ev = Event{Name: p.name, Data: p.data, At: at, Done: bytes.Equal(bytes.TrimSpace(p.data), doneMarker)}
	err := emit(&p.ev)
	p.data = p.data[:0]
	p.name = p.name[:0]
	p.has = false
	return err
}
