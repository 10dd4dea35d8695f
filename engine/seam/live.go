package seam

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-dev/tollgate/engine/embedded"
	"github.com/tollgate-dev/tollgate/engine/openai"
	"github.com/tollgate-dev/tollgate/engine/transport/sse"
	"github.com/tollgate-dev/tollgate/internal/redact"
	"github.com/tollgate-dev/tollgate/report"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// A live seam is the route session sent as real requests: the client is
// the head node and the endpoint the tail. The prefill transfer is one
// streamed /v1/completions request with the session's prompt; decode
// transfer i is one streamed request of the prompt followed by the i tokens
// received so far, with max_tokens 1, so each decode transfer carries
// exactly one token and has a request (and, stateless, a connection) of
// its own. Every transfer carries the session header and reads it back.

// LiveOptions are what a live capture needs beyond the run.
type LiveOptions struct {
	Samples   bool
	LookupEnv func(string) (string, bool)
	// SessionGates are the names of the scenario's gates that read
	// session_id, for the warning when the endpoint never echoes it.
	SessionGates []string
}

const (
	connectTimeout = 10 * time.Second
	// maxResponseBytes bounds one transfer's response body: a one-token
	// answer is a few hundred bytes, a misbehaving server cannot make more
	// than this of it.
	maxResponseBytes = 4 << 20
	// drainWait bounds the wait for the client's sockets, and then the
	// relay's, to close before the cleanup snapshot.
	drainWait = 2 * time.Second
)

// ErrTransfer marks a transfer the endpoint refused or answered badly.
var ErrTransfer = errors.New("seam transfer failed")

// live is one route session on a live endpoint.
type live struct {
	cfg    *scenarios.SeamTarget
	ep     *scenarios.SeamEndpoint
	seam   string
	url    string // the completions URL
	model  string
	apiKey string
	wire   *wire
	client *http.Client
	tr     *http.Transport
	t0     time.Time
	n      int // transfers so far, for activation ids
	phase  []string
	echoed int
	sent   int
	flight atomic.Int64
	// staleRetries counts transfers sent again after a reused connection
	// failed before any response byte.
	staleRetries int
	perSeam      map[string]int // telemetry per seam, flushed into the report at close
}

// Capture runs one run's phases over one route session on the live endpoint
// of its seam target and measures them at the client, into the same shape
// as the stub.
func Capture(ctx context.Context, run *scenarios.Run, opts LiveOptions) (_ *report.Run, err error) {
	cfg := run.Target.Seam
	ep := cfg.Endpoint
	key := ""
	if ep.APIKeyEnv != "" && opts.LookupEnv != nil {
		key, _ = opts.LookupEnv(ep.APIKeyEnv)
	}
	red := endpointRedactor(ep, key)
	defer func() {
		if err != nil {
			err = &redactedError{msg: red.String(err.Error()), err: err}
		}
	}()
	base := strings.TrimSuffix(strings.TrimSuffix(ep.BaseURL, "/"), "/v1")
	var roots *x509.CertPool
	var model, modelSource string
	switch {
	case ep.Embedded() && ep.TLS:
		// Started and listening: ready, and its model is known.
		srv, err := embedded.StartTLS(ctx, ep.Sim)
		if err != nil {
			return nil, err
		}
		defer srv.Stop()
		base, roots, model, modelSource = srv.BaseURL, srv.Roots, cmp.Or(ep.Model, srv.Model), "embedded simulator"
	case ep.Embedded():
		u, stop, err := embedded.Start(ctx, ep.Sim)
		if err != nil {
			return nil, err
		}
		defer stop()
		base = u
	}
	if model == "" {
		if model, modelSource, err = prepare(ctx, base, key, ep); err != nil {
			return nil, err
		}
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("seam: endpoint base_url: %w", err)
	}
	var relay *Relay
	dialAddr := ""
	if cfg.Transport == "relay" {
		if relay, err = StartRelay(ctx, hostPort(u), connectTimeout); err != nil {
			return nil, err
		}
		defer relay.Close()
		dialAddr = relay.Addr()
	}
	leak := 0
	if cfg.Faults != nil {
		leak = cfg.Faults.LeakConnections
	}
	l := newLive(cfg, base, model, key, newWire(dialAddr, connectTimeout, leak))
	if roots != nil {
		l.tr.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	}
	out, _, err := runPhases(ctx, run, opts.Samples, seamNames(cfg.Route), l.hop)
	cleanup := l.close(ctx, relay)
	out.Cleanup = &cleanup
	out.Source = report.SourceLive
	out.Target.BaseURL, out.Target.Model, out.Target.ModelSource = redact.URL(base), model, modelSource
	out.Connections.Attempts = int(l.wire.dials.Load())
	out.Connections.StaleRetries = l.staleRetries
	if relay != nil {
		c := relay.Counters()
		out.Relay = &c
	}
	l.wire.release()
	if l.sent > 0 && l.echoed == 0 {
		out.Warnings = append(out.Warnings, neverEchoed(run, l.sent, opts.SessionGates))
	}
	return out, err
}

// neverEchoed is the warning for an endpoint that answered no transfer with
// the session header: every sample's session_id is then empty, and a gate
// that counts distinct session ids sees one session where it cannot know.
func neverEchoed(run *scenarios.Run, sent int, gates []string) string {
	ep := run.Target.Seam.Endpoint
	at := ep.At("session_header")
	if !ep.Has("session_header") {
		at = run.Target.Seam.At("endpoint")
	}
	which := "a gate on distinct(samples(#), \"session_id\")"
	if len(gates) > 0 {
		which = "gate " + strings.Join(quoteAll(gates), ", ")
	}
	return fmt.Sprintf("%s: targets.%s.endpoint.session_header: the endpoint echoed %s on none of %d transfers, so every sample's session_id is empty and %s cannot tell one route session from none; make the endpoint echo it (a route node does), or set session_header to the header it echoes",
		at, run.Target.Name, ep.SessionHeader, sent, which)
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// prepare waits for the endpoint and settles the model, on a client of its
// own: its connections are closed before the session starts and never
// counted as the seam's.
func prepare(ctx context.Context, base, key string, ep *scenarios.SeamEndpoint) (model, source string, err error) {
	c, err := openai.New(openai.Config{BaseURL: base, APIKey: key, Headers: ep.Headers, ConnectTimeout: connectTimeout, Secrets: secretValues(ep)})
	if err != nil {
		return "", "", fmt.Errorf("seam: endpoint: %w", err)
	}
	defer c.Close()
	if err := c.WaitReady(ctx, time.Now().Add(ep.ReadyTimeout.Duration)); err != nil {
		return "", "", fmt.Errorf("seam: endpoint not ready within %s: %w", ep.ReadyTimeout.Duration, err)
	}
	if ep.Model != "" {
		return ep.Model, "scenario", nil
	}
	ids, err := c.Models(ctx)
	if err != nil {
		return "", "", fmt.Errorf("seam: %w", err)
	}
	return ids[0], "first id from /v1/models", nil
}

func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

func newLive(cfg *scenarios.SeamTarget, base, model, key string, w *wire) *live {
	// One transport per seam: cached keeps at most one connection and
	// reuses it for the whole session; stateless turns keep-alive off, so
	// every transfer dials and closes its own. HTTP/1.1 only, so one
	// connection is one socket, and no transparent gzip, so the bytes
	// counted are the bytes sent.
	tr := &http.Transport{
		DialContext:         w.dial,
		DisableKeepAlives:   cfg.Cache == "stateless",
		MaxConnsPerHost:     1,
		MaxIdleConnsPerHost: 1,
		DisableCompression:  true,
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
		TLSHandshakeTimeout: connectTimeout,
	}
	return &live{
		cfg: cfg, ep: cfg.Endpoint, seam: seamNames(cfg.Route)[0], url: base + "/v1/completions", model: model, apiKey: key,
		wire: w, tr: tr, t0: time.Now(), perSeam: map[string]int{},
		client: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
	}
}

// hop sends one transfer over the live seam (a live route has one seam).
func (l *live) hop(ctx context.Context, kind string, tokenIndex int) ([]transfer, string, error) {
	if tokenIndex <= 0 {
		l.phase = l.phase[:0]
	}
	prompt := l.ep.Prompt
	if tokenIndex > 0 {
		prompt += strings.Join(l.phase, "")
	}
	m, text, err := l.transfer(ctx, kind, tokenIndex, prompt)
	if err != nil {
		return nil, "", err
	}
	if tokenIndex >= 0 {
		l.phase = append(l.phase, text)
	}
	return []transfer{l.sample(m)}, text, nil
}

// measured is what the client saw of one transfer.
type measured struct {
	kind                      string
	tokenIndex                int
	activationID, sessionID   string
	start, connect, ttfb, lat time.Duration
	status                    int
	payload, written, read    int64
	dialled                   bool
}

// sample turns a measurement into a transfer in the seam shape; the shape
// of a live run goes through here too.
func (l *live) sample(m measured) transfer {
	var ti *int
	if m.tokenIndex >= 0 {
		i := m.tokenIndex
		ti = &i
	}
	wireBytes := m.written + m.read
	ratio := 0.0
	if wireBytes > 0 {
		ratio = float64(m.payload) / float64(wireBytes)
	}
	return transfer{latNS: m.lat.Nanoseconds(), sample: report.SeamSample{
		Source: report.SourceLive, Phase: m.kind, TokenIndex: ti, SessionID: m.sessionID, ActivationID: m.activationID,
		Seam: l.seam, Mode: l.cfg.Transport, CacheMode: l.cfg.Cache,
		StartMS:           report.F(report.MS(m.start.Nanoseconds())),
		ConnectionSetupMS: report.MS(m.connect.Nanoseconds()),
		TTFBMS:            report.F(report.MS(m.ttfb.Nanoseconds())),
		SeamLatencyMS:     report.MS(m.lat.Nanoseconds()),
		HTTPStatus:        m.status,
		PayloadBytes:      m.payload, WireBytes: wireBytes, RequestBytes: m.written, ResponseBytes: m.read,
		CompressionRatio:    ratio,
		ConnectionAttempted: m.dialled,
	}}
}

// timing collects a transfer's httptrace events; the dial's run on the
// transport's goroutines, hence the lock.
type timing struct {
	mu                  sync.Mutex
	gotConn, reused     bool
	connStart, connDone time.Time
	firstByte           time.Time
}

func (t *timing) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) {
			t.mu.Lock()
			t.gotConn, t.reused = true, i.Reused
			t.mu.Unlock()
		},
		ConnectStart: func(string, string) {
			t.mu.Lock()
			if t.connStart.IsZero() {
				t.connStart = time.Now()
			}
			t.mu.Unlock()
		},
		ConnectDone: func(string, string, error) {
			t.mu.Lock()
			t.connDone = time.Now()
			t.mu.Unlock()
		},
		TLSHandshakeDone: func(tls.ConnectionState, error) {
			t.mu.Lock()
			t.connDone = time.Now()
			t.mu.Unlock()
		},
		GotFirstResponseByte: func() {
			t.mu.Lock()
			t.firstByte = time.Now()
			t.mu.Unlock()
		},
	}
}

// transfer sends one request and reads its one-token answer to the end.
func (l *live) transfer(ctx context.Context, kind string, tokenIndex int, prompt string) (measured, string, error) {
	l.n++
	m := measured{kind: kind, tokenIndex: tokenIndex, activationID: fmt.Sprintf("%s-activation-%d", l.cfg.SessionID, l.n)}
	body, err := l.body(prompt)
	if err != nil {
		return m, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, l.ep.Timeout.Duration)
	defer cancel()
	w0, r0 := l.wire.written.Load(), l.wire.read.Load()
	l.flight.Add(1)
	defer l.flight.Add(-1)
	l.sent++
	start := time.Now()
	m.start = start.Sub(l.t0)
	var tm *timing
	var resp *http.Response
	// A request that fails on a reused connection before any response byte
	// never reached the model (a server that closed its keep-alive
	// connection): it is sent once more, on a fresh connection, and counted.
	// The transfer's latency and bytes include the failed attempt.
	for attempt := 0; ; attempt++ {
		tm = &timing{}
		req, err := l.request(httptrace.WithClientTrace(ctx, tm.trace()), body)
		if err != nil {
			return m, "", err
		}
		resp, err = l.client.Do(req)
		if err == nil {
			break
		}
		tm.mu.Lock()
		stale := tm.gotConn && tm.reused && tm.firstByte.IsZero()
		tm.mu.Unlock()
		if attempt > 0 || !stale || ctx.Err() != nil {
			return m, "", fmt.Errorf("seam: %s transfer %s: %w", kind, m.activationID, err)
		}
		l.staleRetries++
	}
	text, n, rerr := readCompletion(resp)
	// Drained to the end, so a cached connection is back in the pool before
	// the next transfer asks for one.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBytes))
	_ = resp.Body.Close()
	end := time.Now()
	tm.mu.Lock()
	defer tm.mu.Unlock()
	m.status = resp.StatusCode
	m.lat = end.Sub(start)
	if !tm.firstByte.IsZero() {
		m.ttfb = tm.firstByte.Sub(start)
	}
	m.dialled = tm.gotConn && !tm.reused
	if m.dialled && !tm.connStart.IsZero() && tm.connDone.After(tm.connStart) {
		m.connect = tm.connDone.Sub(tm.connStart)
	}
	m.written, m.read = l.wire.written.Load()-w0, l.wire.read.Load()-r0
	m.payload = int64(len(body)) + n
	m.sessionID = resp.Header.Get(l.ep.SessionHeader)
	if m.sessionID != "" {
		l.echoed++
	}
	l.perSeam[l.seam]++
	if resp.StatusCode/100 != 2 {
		return m, "", fmt.Errorf("seam: %s transfer %s: HTTP %d: %s: %w", kind, m.activationID, resp.StatusCode, snippet(text), ErrTransfer)
	}
	if rerr != nil {
		return m, "", fmt.Errorf("seam: %s transfer %s: %w", kind, m.activationID, rerr)
	}
	return m, text, nil
}

func snippet(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// request is one attempt at a transfer.
func (l *live) request(ctx context.Context, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("seam: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range l.ep.Headers {
		req.Header.Set(k, v)
	}
	if l.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+l.apiKey)
	}
	req.Header.Set(l.ep.SessionHeader, l.cfg.SessionID)
	return req, nil
}

// body is the transfer's request: greedy, one token, streamed.
func (l *live) body(prompt string) ([]byte, error) {
	b := map[string]any{"model": l.model, "prompt": prompt, "max_tokens": 1, "temperature": 0, "stream": true}
	for k, v := range l.ep.Body {
		if v == nil {
			delete(b, k)
		} else {
			b[k] = v
		}
	}
	out, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("seam: request body: %w", err)
	}
	return out, nil
}

// readCompletion reads a completion's text from a streamed (SSE) or plain
// JSON answer; for an error status it returns the body's start as text. n
// is the body bytes read.
func readCompletion(resp *http.Response) (text string, n int64, err error) {
	body := &countingReader{r: io.LimitReader(resp.Body, maxResponseBytes+1)}
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(body, 1024))
		return string(b), body.n, nil
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var sb strings.Builder
	if ct == "text/event-stream" {
		p := sse.NewParser(0)
		buf := make([]byte, 32<<10)
		emit := func(ev *sse.Event) error {
			if ev.Done {
				return nil
			}
			return appendChunk(&sb, ev.Data)
		}
		for {
			k, rerr := body.Read(buf)
			if k > 0 {
				if err := p.Feed(buf[:k], 0, emit); err != nil {
					return sb.String(), body.n, fmt.Errorf("%w: %w", ErrTransfer, err)
				}
			}
			if rerr == io.EOF {
				break
			}
			if rerr != nil {
				return sb.String(), body.n, rerr
			}
		}
		if err := p.Flush(0, emit); err != nil {
			return sb.String(), body.n, fmt.Errorf("%w: %w", ErrTransfer, err)
		}
	} else {
		b, rerr := io.ReadAll(body)
		if rerr != nil {
			return "", body.n, rerr
		}
		if err := appendChunk(&sb, b); err != nil {
			return "", body.n, err
		}
	}
	if body.n > maxResponseBytes {
		return sb.String(), body.n, fmt.Errorf("%w: the answer to a one-token request exceeds %d bytes", ErrTransfer, maxResponseBytes)
	}
	return sb.String(), body.n, nil
}

// appendChunk adds a completion chunk's text (completions "text"; chat
// "delta.content" or "message.content", for servers that answer so).
func appendChunk(sb *strings.Builder, data []byte) error {
	var c struct {
		Choices []struct {
			Text    string                   `json:"text"`
			Delta   struct{ Content string } `json:"delta"`
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return fmt.Errorf("%w: undecodable chunk %s: %w", ErrTransfer, snippet(string(data)), err)
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return fmt.Errorf("%w: the endpoint sent an error: %s", ErrTransfer, snippet(string(c.Error)))
	}
	for _, ch := range c.Choices {
		sb.WriteString(ch.Text + ch.Delta.Content + ch.Message.Content)
	}
	return nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += int64(k)
	return k, err
}

// close ends the session and then looks at what is really left: client
// sockets not closed, relay connections still open, transfers in flight.
//
// Go's transport closes a stateless transfer's socket a moment after the
// body's last byte was read, and the relay sees a close a moment after
// that, so close waits (at most drainWait, and not past ctx) for the
// sockets to close: what is still open then is counted.
func (l *live) close(ctx context.Context, relay *Relay) report.Cleanup {
	l.tr.CloseIdleConnections()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drainWait)
	defer cancel()
	l.wire.waitClosed(dctx)
	open := l.wire.openConns()
	relayOpen := 0
	if relay != nil {
		relay.waitIdle(dctx, open)
		relayOpen = relay.Counters().OpenConnections
	}
	clear(l.perSeam) // flushed into the report
	return report.Cleanup{
		SessionClosed:       true,
		OpenConnections:     open + relayOpen,
		QueuedActivations:   int(l.flight.Load()),
		TelemetryAggregates: len(l.perSeam),
	}
}

// ShapeLive is the report a live capture of run will have, built through
// the same phase loop and sample code with placeholder measurements;
// nothing is sent.
func ShapeLive(run *scenarios.Run, samples bool) *report.Run {
	cfg := run.Target.Seam
	l := newLive(cfg, "http://shape", "shape", "", newWire("", 0, 0))
	n := 0
	hop := func(_ context.Context, kind string, tokenIndex int) ([]transfer, string, error) {
		n++
		return []transfer{l.sample(measured{kind: kind, tokenIndex: tokenIndex, activationID: fmt.Sprint(n), status: http.StatusOK, dialled: true,
			lat: time.Millisecond, payload: 1, written: 1, read: 1})}, "", nil
	}
	out, _, _ := runPhases(context.Background(), run, samples, seamNames(cfg.Route), hop)
	out.Source = report.SourceLive
	out.Cleanup = &report.Cleanup{}
	out.Target.BaseURL, out.Target.Model, out.Target.ModelSource = "http://shape", "shape", "shape"
	if cfg.Transport == "relay" {
		out.Relay = &report.RelayCounters{}
	}
	return out
}

// secretValues are the values of the endpoint's secret headers.
func secretValues(ep *scenarios.SeamEndpoint) []string {
	var out []string
	for k, v := range ep.Headers {
		if redact.IsSecretHeader(k, ep.SecretHeaders) {
			out = append(out, v)
		}
	}
	return out
}

// endpointRedactor knows every secret of a live seam: the API key, secret
// header values and the base URL's password or secret parameters.
func endpointRedactor(ep *scenarios.SeamEndpoint, key string) *redact.Redactor {
	secrets := append(secretValues(ep), redact.URLSecrets(ep.BaseURL)...)
	if key != "" {
		secrets = append(secrets, key)
	}
	return redact.New(secrets...)
}

// redactedError says what went wrong without the secrets, and still
// matches what it wraps with errors.Is and errors.As.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
