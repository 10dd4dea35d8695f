package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

// RequestRecord is one line of the request log (Config.RequestLog): what
// the server did with one admitted generation request, with wall-clock
// times in Unix nanoseconds so a client on the same host can pair its own
// measurements with them request by request.
type RequestRecord struct {
	// ID is the response id: the "id" of every chunk and the X-Request-Id
	// response header.
	ID string `json:"id"`
	// Endpoint is "chat", "completions" or "messages" (Anthropic).
	Endpoint string `json:"endpoint"`
	Stream   bool   `json:"stream"`
	// ArrivalUnixNs is when the handler began (before the body was read).
	ArrivalUnixNs int64 `json:"arrival_unix_ns"`
	PromptTokens  int   `json:"prompt_tokens"`
	CachedTokens  int   `json:"cached_tokens"`
	// SlotWaitNs is the time spent queued for a running slot.
	SlotWaitNs int64 `json:"slot_wait_ns"`
	// InjectedTTFTNs is the latency the model injected after the slot:
	// TTFTBase plus the wait for, and the length of, this prefill.
	InjectedTTFTNs int64 `json:"injected_ttft_ns"`
	// FirstTokenSendUnixNs and LastTokenSendUnixNs are taken just before the
	// write of the chunk carrying the first and the last token (0: none sent).
	FirstTokenSendUnixNs int64 `json:"first_token_send_unix_ns,omitempty"`
	LastTokenSendUnixNs  int64 `json:"last_token_send_unix_ns,omitempty"`
	// Tokens counts the completion tokens written to the client.
	Tokens int `json:"tokens"`
	// Outcome is the finish reason ("stop", "length"), "aborted" (the client
	// left or the server closed) or "fault" (an injected fault ended it).
	Outcome string `json:"outcome"`
}

// requestLogBufBytes bounds the log's buffer: memory stays constant however
// many requests are served.
const requestLogBufBytes = 64 << 10

// requestLogFlushEvery bounds how stale the file may get between requests.
const requestLogFlushEvery = time.Second

// requestLog streams RequestRecords as JSON lines. The buffer only ever
// holds whole lines and is written out whole, so every write(2) ends on a
// line boundary and a killed server leaves complete lines behind.
type requestLog struct {
	mu        sync.Mutex
	w         io.Writer
	buf       []byte
	lastFlush time.Time
	err       error // the first write error; later records are dropped
}

func newRequestLog(w io.Writer) *requestLog {
	if w == nil {
		return nil
	}
	return &requestLog{w: w, buf: make([]byte, 0, requestLogBufBytes), lastFlush: time.Now()}
}

// add appends one record; a nil log takes none.
func (l *requestLog) add(r *RequestRecord) {
	if l == nil {
		return
	}
	line, err := json.Marshal(r)
	if err != nil { // only our own plain type is encoded; a failure is a bug
		return
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	if len(l.buf)+len(line) > cap(l.buf) {
		l.flushLocked()
	}
	if len(line) > cap(l.buf) { // cannot happen with bounded ids; stay bounded anyway
		l.writeLocked(line)
		return
	}
	l.buf = append(l.buf, line...)
	if time.Since(l.lastFlush) >= requestLogFlushEvery {
		l.flushLocked()
	}
}

func (l *requestLog) flushLocked() {
	l.writeLocked(l.buf)
	l.buf = l.buf[:0]
	l.lastFlush = time.Now()
}

func (l *requestLog) writeLocked(b []byte) {
	if len(b) == 0 || l.err != nil {
		return
	}
	if _, err := l.w.Write(b); err != nil {
		l.err = fmt.Errorf("sim: write request log: %w", err)
	}
}

// flush writes what is buffered and reports the first write error.
func (l *requestLog) flush() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked()
	return l.err
}
