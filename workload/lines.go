package workload

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
)

// errLineTooLong is a line of a trace or JSONL dataset past MaxLineBytes.
var errLineTooLong = fmt.Errorf("line longer than %d bytes", MaxLineBytes)

// skipBOM reads r past a leading UTF-8 byte order mark, which editors and
// spreadsheets on Windows write and a JSON or CSV reader would take for
// the first field's text.
func skipBOM(r io.Reader) *bufio.Reader {
	br := bufio.NewReaderSize(r, 64<<10)
	if b, err := br.Peek(3); err == nil && string(b) == "\ufeff" {
		_, _ = br.Discard(3)
	}
	return br
}

// lineLimit fails a read that would make a line longer than max bytes.
type lineLimit struct {
	r   io.Reader
	n   int // bytes of the current line so far
	max int
}

func (l *lineLimit) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for b := p[:n]; len(b) > 0; {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			l.n += len(b)
			break
		}
		if l.n+i > l.max {
			return 0, errLineTooLong
		}
		l.n, b = 0, b[i+1:]
	}
	if l.n > l.max {
		return 0, errLineTooLong
	}
	return n, err
}
