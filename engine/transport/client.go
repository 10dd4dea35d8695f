package transport

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/transport/sse"
	"github.com/tollgate-dev/tollgate/internal/redact"
	"github.com/tollgate-dev/tollgate/internal/safefile"
	"github.com/tollgate-dev/tollgate/internal/textsafe"
)

// Defaults applied by New when a Config field is zero.
const (
	// DefaultReadBufferBytes is what a connection's reader buffers and what
	// a stream reads at once. SSE events are 100–500 bytes and arrive one
	// per read unless the client is late; 64 KiB cost 128 KiB of heap per
	// open stream for nothing (bench/client -only streams).
	DefaultReadBufferBytes = 4 << 10
	// writeBufferBytes is a connection's write buffer: the request head
	// and small bodies go out in one write; a longer body is copied on in
	// 32 KiB writes by net/http, whatever this size.
	writeBufferBytes      = 4 << 10
	DefaultMaxConns       = 64
	DefaultConnectTimeout = 10 * time.Second
	// idleConnTimeout is how long a connection waits in either pool.
	idleConnTimeout = 90 * time.Second
	// errorSnippetBytes caps the response body quoted in an http_status error.
	errorSnippetBytes = 512
	// metadataBytes caps what Metadata keeps per endpoint.
	metadataBytes = 64 << 10
	// jsonBodyBytes caps a non-streamed response body.
	jsonBodyBytes = 16 << 20
	// MaxResponseHeaderBytes bounds a response's status line and headers
	// together; a longer head is a protocol error. LLM servers send a few
	// hundred bytes (Go's own default would be 10 MB).
	MaxResponseHeaderBytes = 1 << 20
	// MaxErrorMessageBytes bounds a request error's message once its
	// control characters are escaped (the body excerpt in it is at most
	// errorSnippetBytes of the body).
	MaxErrorMessageBytes = 2 << 10
)

// Config describes one target, whatever protocol it speaks.
type Config struct {
	// BaseURL is the server root, e.g. http://127.0.0.1:8000 (a trailing /v1
	// is accepted and dropped; paths are added as /v1/...).
	BaseURL string
	// APIKey is the key's value (the caller reads it from the environment);
	// the Wire puts it in its header (OpenAI: "Authorization: Bearer ..."),
	// never reported.
	APIKey string
	// Headers are sent with every request (e.g. X-Meshnet-Session).
	Headers map[string]string
	// ExtraBody is deep-merged (MergeBody) by the Wire into every request
	// body after its defaults; a key set to nil removes that default.
	ExtraBody map[string]any

	ConnectTimeout    time.Duration // TCP+TLS connect; DefaultConnectTimeout when 0
	FirstTokenTimeout time.Duration // request start → first token event; 0: none
	IdleTimeout       time.Duration // max gap between token events after the first token (other events do not count); 0: none
	TotalTimeout      time.Duration // whole request; 0: none

	// CAFile is a PEM bundle trusted in addition to the system roots.
	// Certificate verification is never disabled.
	CAFile string
	// MaxConns sizes the keep-alive pool; set it to the run's concurrency.
	MaxConns int
	// ReadBufferBytes is the socket read size (DefaultReadBufferBytes when 0).
	ReadBufferBytes int
	// MaxLineBytes caps one SSE line (sse.DefaultMaxLineBytes when 0).
	MaxLineBytes int
	// Secrets are further values (e.g. of headers marked secret) redacted
	// from every message, like the API key.
	Secrets []string
	// UserspaceClock times arrivals when reads return instead of with the
	// kernel's receive timestamps (SO_TIMESTAMPNS, Linux), e.g. to compare.
	UserspaceClock bool
	// NoStaleRetry turns off the one retry, on a fresh connection, of a
	// request whose connection the server had closed unseen (pool.go's
	// rule); such a failure is then a stale_connection error.
	NoStaleRetry bool
	// FollowRedirects is FollowNever (default) or FollowSameOrigin.
	FollowRedirects string
	// StdHTTP sends every request through net/http's transport, the
	// generation requests over plain HTTP too (h1.go's own reader sends
	// those by default), e.g. to compare the two.
	StdHTTP bool
}

// Redirect policies for Config.FollowRedirects.
const (
	FollowNever      = "never"
	FollowSameOrigin = "same_origin"
)

// Client talks to one target through its Wire. It is safe for concurrent
// use.
type Client struct {
	cfg     Config
	wire    Wire
	base    string
	http    *http.Client
	secrets *redact.Redactor
	bufs    sync.Pool
	// dialed is set once a connection to the target was made: a refusal
	// after it is the server's overload, not a wrong address.
	dialed *atomic.Bool

	mu           sync.Mutex
	countMethod  string // the CountTokens method that last worked
	tokenizeForm int    // the /tokenize body form that last worked
	// unresponsive are counting methods whose count did not grow with the
	// text (seen: a /tokenize form the server ignores); never tried again.
	unresponsive map[string]string

	// waits are the deadlines of the calls around a run (defaultWaits);
	// metricsSilent is set once /metrics went unanswered, and it is not
	// asked again.
	waits         waits
	metricsSilent atomic.Bool

	// lateRead, for tests, runs after each read of a stream returns and
	// before it is timed: it plays a client scheduled late.
	lateRead func(p []byte)
}

// New validates cfg and builds a client with its own connection pool that
// speaks wire.
func New(cfg Config, wire Wire) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(cfg.BaseURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai: base URL %q must be http(s)://host[:port]", redact.URL(cfg.BaseURL))
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1")
	u.RawQuery, u.Fragment = "", ""
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.ReadBufferBytes <= 0 {
		cfg.ReadBufferBytes = DefaultReadBufferBytes
	}
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		// The rules and cap the scenario loader checked the file by.
		pem, err := safefile.ReadAll(cfg.CAFile, safefile.Rules{Limit: safefile.MaxCAFileBytes, What: "CA file"})
		if err != nil {
			return nil, fmt.Errorf("openai: read CA file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("openai: CA file %s holds no PEM certificate", cfg.CAFile)
		}
		tlsConf.RootCAs = pool
	}
	dialer := &net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second}
	dial := literalDialer(dialer)
	if !cfg.UserspaceClock {
		dial = kernelTimestampDialer(dial)
	}
	dialed := new(atomic.Bool)
	dial = hintDialer(dial, dialed)
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dial,
		TLSClientConfig:     tlsConf,
		TLSHandshakeTimeout: cfg.ConnectTimeout,
		MaxIdleConns:        cfg.MaxConns,
		MaxIdleConnsPerHost: cfg.MaxConns,
		IdleConnTimeout:     idleConnTimeout,
		// gzip would buffer the stream and hide arrival times.
		DisableCompression:     true,
		ReadBufferSize:         cfg.ReadBufferBytes,
		WriteBufferSize:        writeBufferBytes,
		MaxResponseHeaderBytes: MaxResponseHeaderBytes,
	}
	var h1 *h1Transport
	if !cfg.StdHTTP {
		h1 = newH1Transport(dial, cfg.MaxConns)
	}
	c := &Client{
		cfg:    cfg,
		wire:   wire,
		base:   u.String(),
		dialed: dialed,
		http:   &http.Client{Transport: newRetryTransport(tr, h1, !cfg.NoStaleRetry), CheckRedirect: checkRedirect(cfg.FollowRedirects)},
		waits:  defaultWaits,
	}
	c.bufs.New = func() any { b := make([]byte, cfg.ReadBufferBytes); return &b }
	secrets := append([]string{cfg.APIKey}, cfg.Secrets...)
	secrets = append(secrets, redact.URLSecrets(cfg.BaseURL)...)
	for k, v := range cfg.Headers {
		if redact.IsSecretHeader(k, nil) {
			secrets = append(secrets, v)
		}
	}
	c.secrets = redact.New(secrets...)
	return c, nil
}

// maxRedirects bounds a same-origin redirect chain.
const maxRedirects = 5

// checkRedirect follows only what the policy allows; anything else returns
// the 3xx itself, which Stream classifies as a redirect error. Go changes a
// POST into a GET on 301/302/303: that is never followed, a generation
// request sent as a GET measures nothing. A chain the policy follows that
// is still redirecting after maxRedirects is a redirectLoopError.
func checkRedirect(policy string) func(req *http.Request, via []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		first := via[0]
		if policy != FollowSameOrigin || req.Method != first.Method ||
			req.URL.Scheme != first.URL.Scheme || req.URL.Host != first.URL.Host {
			return http.ErrUseLastResponse
		}
		if len(via) > maxRedirects {
			loop := &redirectLoopError{redirects: len(via), to: safeURL(req.URL)}
			for _, v := range via {
				loop.revisits = loop.revisits || v.URL.String() == req.URL.String()
			}
			return loop
		}
		return nil
	}
}

// do is c.http.Do(req). Where no redirect is followed (FollowNever, the
// default) it calls the transport itself, wrapping its error as Do does:
// Do would only copy the request's headers for a redirect it then
// declines (850 B and a few µs a request), and a 3xx comes back as it is
// either way. TestDoIsHTTPClientDo holds the two to the same answers.
func (c *Client) do(req *http.Request) (*http.Response, error) {
	// A URL with a user in it: Do sends it as Basic auth.
	if c.cfg.FollowRedirects == FollowSameOrigin || req.URL.User != nil {
		return c.http.Do(req)
	}
	resp, err := c.http.Transport.RoundTrip(req)
	if err == nil {
		return resp, nil
	}
	// Do's rewording of a TLS handshake answered in plain HTTP.
	if tlsErr, ok := err.(tls.RecordHeaderError); ok && string(tlsErr.RecordHeader[:]) == "HTTP/" {
		err = http.ErrSchemeMismatch
	}
	return nil, &url.Error{Op: urlErrorOp(req.Method), URL: urlWithoutPassword(req.URL), Err: err}
}

// urlErrorOp is a method as http.Client's errors name it ("Post"; an
// empty method is a GET).
func urlErrorOp(method string) string {
	if method == "" {
		return "Get"
	}
	return method[:1] + strings.ToLower(method[1:])
}

// urlWithoutPassword is u as http.Client's errors quote it: a password
// becomes ***.
func urlWithoutPassword(u *url.URL) string {
	if _, ok := u.User.Password(); ok {
		return strings.Replace(u.String(), u.User.String()+"@", u.User.Username()+":***@", 1)
	}
	return u.String()
}

// redirectLoopError is a same-origin redirect chain that did not end
// within maxRedirects: the server's loop, a protocol error.
type redirectLoopError struct {
	redirects int
	to        string // the next target, without userinfo, query or fragment
	revisits  bool   // it is one the chain already asked
}

func (e *redirectLoopError) Error() string {
	again := ""
	if e.revisits {
		again = ", asked before in the chain"
	}
	return fmt.Sprintf("redirect loop: %d redirects in a row without an answer (at most %d are followed); the next to %s%s", e.redirects, maxRedirects, e.to, again)
}

// safeURL is u fit for a message: no userinfo, query or fragment (they
// may hold tokens).
func safeURL(u *url.URL) string {
	v := *u
	v.User, v.RawQuery, v.Fragment, v.RawFragment = nil, "", "", ""
	return v.String()
}

// safeLocation is a redirect target fit for a message: no userinfo, no
// query or fragment (they may hold tokens).
func safeLocation(resp *http.Response) string {
	loc := resp.Header.Get("Location")
	u, err := resp.Request.URL.Parse(loc)
	if err != nil {
		return "an unparsable Location"
	}
	return safeURL(u)
}

// The deadlines of the calls around a run, each call on its own (a shorter
// total timeout bounds them more): a server that never answers one delays
// the run by that much at most, and the default total (30m) is sized for
// generation, not for these.
const (
	// MetadataTimeout: each metadata endpoint; the five are read at once.
	MetadataTimeout = 5 * time.Second
	// ModelsTimeout: /v1/models, read when the scenario names no model.
	ModelsTimeout = 10 * time.Second
	// MetricsTimeout: each /metrics scrape. One that goes unanswered is
	// the last: /metrics is not asked again by this client.
	MetricsTimeout = 10 * time.Second
	// AuxTimeout: each readiness probe (the ready timeout bounds them all)
	// and each token-count call of a calibration.
	AuxTimeout = 30 * time.Second
)

// waits are a client's deadlines for the calls around a run.
type waits struct{ metadata, models, metrics, aux time.Duration }

var defaultWaits = waits{metadata: MetadataTimeout, models: ModelsTimeout, metrics: MetricsTimeout, aux: AuxTimeout}

// wait is d, or the total timeout when that is shorter.
func (c *Client) wait(d time.Duration) time.Duration {
	if c.cfg.TotalTimeout > 0 {
		return min(c.cfg.TotalTimeout, d)
	}
	return d
}

// ErrNoAnswer marks a call around the run (metadata, the model list,
// /metrics, a readiness probe, a token count) that the server did not
// answer within its deadline; it also wraps context.DeadlineExceeded.
var ErrNoAnswer = errors.New("no answer")

// Close releases idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// redact removes secret values from text that may reach a report or log.
func (c *Client) redact(s string) string { return c.secrets.String(s) }

// secretSlack is what is read of a body past the excerpt quoted from it,
// so that a secret the server echoes across the cut is whole when it is
// redacted, and no part of it shows.
const secretSlack = 4 << 10

// excerpt is what Snippet quotes of a body, its secrets redacted before
// it is cut.
func (c *Client) excerpt(b []byte, n int) string {
	b = b[:min(len(b), n+secretSlack)]
	return Snippet([]byte(c.redact(string(b))), n)
}

// newRequest builds a request with auth and configured headers.
func (c *Client) newRequest(ctx context.Context, method, path string, body []byte) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return nil, fmt.Errorf("openai: build request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	c.wire.Header(req.Header, c.cfg.APIKey)
	for k, v := range c.cfg.Headers {
		req.Header.Set(k, v)
	}
	return req, nil
}

// Causes set on the request context so a failed read can be classified.
var (
	errFirstToken = errors.New("first-token timeout")
	errIdle       = errors.New("idle timeout")
	errTotal      = errors.New("total timeout")
)

func (c *Client) fail(class measure.ErrorClass, status int, msg string, cause error) *measure.Error {
	return &measure.Error{Class: class, Status: status, Message: c.safe(msg), Cause: cause, Protocol: c.wire.Name()}
}

// safe makes a message that may quote the server fit to show: secrets
// redacted, control characters escaped (textsafe.Clean, the rule every
// output follows), at most MaxErrorMessageBytes.
func (c *Client) safe(msg string) string {
	return cut(textsafe.Clean(c.redact(msg)), MaxErrorMessageBytes)
}

// safeError is err with the message safe makes of it: Go's HTTP client
// quotes what the server sent (a malformed header line) as it came.
// errors.Is and As still reach err.
type safeError struct {
	msg string
	err error
}

func (e *safeError) Error() string { return e.msg }
func (e *safeError) Unwrap() error { return e.err }

func (c *Client) safeErr(err error) error {
	if err == nil {
		return nil
	}
	return &safeError{msg: c.safe(err.Error()), err: err}
}

// classify maps a transport error to a class, looking first at why the
// request context ended.
func (c *Client) classify(ctx context.Context, err error, during string) *measure.Error {
	if ctx.Err() != nil {
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, errFirstToken):
			return c.fail(measure.ClassTimeoutFirstToken, 0, fmt.Sprintf("no token within %s", c.cfg.FirstTokenTimeout), cause)
		case errors.Is(cause, errIdle):
			return c.fail(measure.ClassTimeoutIdle, 0, fmt.Sprintf("no token event for %s after the last one", c.cfg.IdleTimeout), cause)
		case errors.Is(cause, errTotal):
			return c.fail(measure.ClassTimeoutTotal, 0, fmt.Sprintf("request exceeded %s", c.cfg.TotalTimeout), cause)
		default:
			return c.fail(measure.ClassCanceled, 0, during+": "+cause.Error(), cause)
		}
	}
	var loop *redirectLoopError
	if errors.As(err, &loop) {
		return c.fail(measure.ClassProtocol, 0, loop.Error(), err)
	}
	var stale *staleError
	if errors.As(err, &stale) {
		if stale.retry == nil {
			return c.fail(measure.ClassStaleConnection, 0, during+": "+err.Error(), err)
		}
		during += " (after a stale-connection retry)"
	}
	var opErr *net.OpError
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	var unkCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var headErr textproto.ProtocolError
	switch {
	case headerTooLarge(err):
		return c.fail(measure.ClassProtocol, 0, fmt.Sprintf("%s: the response's status line and headers exceeded %d bytes, the bound on them", during, MaxResponseHeaderBytes), err)
	case errors.As(err, &opErr) && opErr.Op == "dial",
		errors.As(err, &dnsErr), errors.As(err, &certErr), errors.As(err, &recErr),
		errors.As(err, &unkCA), errors.As(err, &hostErr):
		return c.fail(measure.ClassConnect, 0, err.Error()+c.connectCause(err), err)
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, io.EOF), errors.Is(err, syscall.EPIPE), errors.Is(err, errClosedBeforeSend),
		errors.Is(err, errClosedInHead):
		return c.fail(measure.ClassReset, 0, during+": "+err.Error()+closeCause(during), err)
	case errors.Is(err, errNotHTTP), errors.As(err, &headErr), strings.Contains(err.Error(), "malformed HTTP "):
		// h1.go's error, or Go's words for a status line or header it
		// cannot read (pinned by TestResponseHeadErrorsAreProtocol).
		return c.fail(measure.ClassProtocol, 0, during+": the answer is not HTTP: "+err.Error(), err)
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() && during == "connect" {
		return c.fail(measure.ClassConnect, 0, err.Error()+c.connectCause(err), err)
	}
	return c.fail(measure.ClassReset, 0, during+": "+err.Error(), err)
}

// headerTooLarge reports Go's refusal of a response head over
// MaxResponseHeaderBytes, which it says only in words (pinned by
// TestResponseHeadErrorsAreProtocol).
func headerTooLarge(err error) bool {
	return errors.Is(err, errHeadTooLarge) || strings.Contains(err.Error(), "server response headers exceeded")
}

// closeCause names who ended a request that failed with a closed
// connection, by how far it had got: an EOF or reset alone does not say
// whether the answer had begun.
func closeCause(during string) string {
	switch during {
	case "send request", "await response":
		return " (the server closed the connection before any response byte)"
	case "read response headers":
		return " (the server closed the connection inside the response headers)"
	case "read stream", "read body":
		return " (the server closed the connection mid-response)"
	}
	return ""
}

// connectCause is the likely cause of a failed connect, where the error
// says it: the client's own file or port limits, or a server that
// accepted this client's connections before and refuses or ignores them
// now (overloaded: its listen backlog overflowed, or it stopped listening).
func (c *Client) connectCause(err error) string {
	var netErr net.Error
	switch {
	case errors.Is(err, syscall.EMFILE):
		if n := OpenFileLimit(); n > 0 {
			return fmt.Sprintf(" (open-file limit (ulimit -n %d) reached)", n)
		}
		return " (open-file limit (ulimit -n) reached)"
	case errors.Is(err, syscall.ENFILE):
		return " (the system-wide open-file limit (fs.file-max) reached)"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return " (no local port left to connect from: net.ipv4.ip_local_port_range)"
	case errors.Is(err, syscall.ECONNREFUSED) && c.dialed.Load():
		return " (the server accepted connections earlier in this run: its listen backlog overflowed or it stopped listening)"
	case errors.Is(err, syscall.ECONNREFUSED):
		return " (nothing is listening at that address)"
	case errors.As(err, &netErr) && netErr.Timeout() && c.dialed.Load():
		return " (the server accepted connections earlier in this run: a full listen backlog drops new ones unanswered)"
	}
	return ""
}

// MergeBody deep-merges src into dst: nested maps merge, nil deletes, other
// values replace (the rule of the target's body field). src is never
// aliased, so later merges cannot mutate it.
func MergeBody(dst, src map[string]any) {
	for k, v := range src {
		if v == nil {
			delete(dst, k)
			continue
		}
		if sm, ok := v.(map[string]any); ok {
			dm, ok := dst[k].(map[string]any)
			if !ok {
				dm = map[string]any{}
			} else {
				dm = cloneMap(dm)
			}
			MergeBody(dm, sm)
			dst[k] = dm
			continue
		}
		dst[k] = v
	}
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if mm, ok := v.(map[string]any); ok {
			v = cloneMap(mm)
		}
		out[k] = v
	}
	return out
}

// Stream sends one generation request and measures it. The returned error is
// measure.Result.Err (nil on success); measure.Result holds whatever was measured either way.
func (c *Client) Stream(ctx context.Context, req measure.Request) (measure.Result, error) {
	// The request's state lives on the heap and stream's frame stays
	// small: the frames under a parked read are the goroutine's stack for
	// as long as the stream lasts, once per open stream.
	res := new(measure.Result)
	c.stream(ctx, &req, res)
	if res.Err != nil {
		return *res, res.Err
	}
	return *res, nil
}

// StreamInto is Stream writing the result to *res (all of it), with no
// Request or Result copied into the caller's frames: a load phase's job
// calls it, and every frame above a parked read is on the stack of each
// request in flight (engine/live's runner.streamInto).
func (c *Client) StreamInto(ctx context.Context, req *measure.Request, res *measure.Result) {
	*res = measure.Result{}
	c.stream(ctx, req, res)
}

func (c *Client) stream(ctx context.Context, req *measure.Request, res *measure.Result) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s := &sending{req: req}
	defer s.settle(res)
	acc, hreq, err := c.prepare(ctx, req, s)
	if err != nil {
		res.Err = c.fail(measure.ClassProtocol, 0, err.Error(), err)
		return
	}

	// The timeouts' clocks start here, just before the request's.
	dl := &deadlines{idle: c.cfg.IdleTimeout, total: c.cfg.TotalTimeout, ctx: hreq.Context(), cancel: cancel}
	if req.Stream {
		dl.first = c.cfg.FirstTokenTimeout // a non-streamed answer has no first token: TotalTimeout bounds it
	}
	dl.start()
	defer dl.stop()

	// The send timestamp: every offset of the request (ttfb_ms, ttft_ms,
	// e2e_ms, connect and write times) is from here, and the time to get
	// a connection (pool wait, dial, TLS) falls after it.
	s.start = time.Now()
	resp, err := c.do(hreq)
	if err != nil {
		c.unsent(hreq.Context(), s, err, resp, acc.Timeline(), res)
		return
	}
	defer resp.Body.Close()
	if s.firstByte == 0 {
		s.firstByte = time.Since(s.start)
	}
	c.answer(hreq.Context(), s, res, resp, acc, dl)
}

// sending is what one request's trace hooks record while it is sent, in
// one allocation: the hooks run on the transport's goroutines, so the
// figures they share are atomic.
type sending struct {
	req *measure.Request
	// built: the request's body was built (a request that could not be
	// built has no settled figures, not even its target prompt size).
	built bool
	start time.Time
	// firstByte is set by GotFirstResponseByte, which runs before Do
	// returns.
	firstByte                 time.Duration
	conn                      atomic.Pointer[tsConn]
	gotConn, wrote, headBegun atomic.Bool
	headerClock               string // where the first byte's time came from (discarded)
	// Connection and write times, as offsets from start in ns; the trace
	// fires again for a stale-connection retry, so the last attempt wins.
	dialStart, dialDone, tlsStart, tlsDone, gotConnAt, headersAt, wroteAt atomic.Int64
	staleRetries                                                          atomic.Int32
}

func (s *sending) since() int64 { return int64(time.Since(s.start)) }

// trace is the request's trace: its hooks record into s.
func (s *sending) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		ConnectStart:      func(string, string) { s.dialStart.Store(s.since()) },
		ConnectDone:       func(string, string, error) { s.dialDone.Store(s.since()) },
		TLSHandshakeStart: func() { s.tlsStart.Store(s.since()) },
		TLSHandshakeDone:  func(tls.ConnectionState, error) { s.tlsDone.Store(s.since()) },
		GotConn: func(info httptrace.GotConnInfo) {
			if !s.gotConn.Swap(true) && s.req.Connected != nil {
				s.req.Connected()
			}
			s.conn.Store(tsConnOf(info.Conn))
			if info.Reused {
				s.dialStart.Store(0)
				s.dialDone.Store(0)
				s.tlsStart.Store(0)
				s.tlsDone.Store(0)
			}
			s.gotConnAt.Store(s.since())
		},
		// The headers go into the connection's write buffer as soon as
		// it is obtained: the request's first byte is written then.
		WroteHeaders: func() { s.headersAt.Store(max(s.since(), 1)) },
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err != nil {
				return // not sent: the failure is of sending, not awaiting
			}
			s.wrote.Store(true)
			s.wroteAt.Store(s.since())
		},
		GotFirstResponseByte: func() {
			s.firstByte = arrival(s.conn.Load(), s.start, 0, &s.headerClock)
			s.headBegun.Store(true)
		},
	}
}

// settle fills res with what the sending recorded, once the request is
// over.
func (s *sending) settle(res *measure.Result) {
	if !s.built {
		return
	}
	res.Start = s.start
	if h := s.headersAt.Load(); h > 0 {
		res.Written = s.start.Add(time.Duration(h))
	}
	if s.gotConn.Load() {
		c := time.Duration(s.dialDone.Load()-s.dialStart.Load()) + time.Duration(s.tlsDone.Load()-s.tlsStart.Load())
		res.ConnectMS = ptr(durMs(max(c, 0)))
		if w := s.wroteAt.Load(); w > 0 {
			res.RequestWriteMS = ptr(durMs(time.Duration(max(w-s.gotConnAt.Load(), 0))))
		}
	}
	res.StaleConnectionRetries = int(s.staleRetries.Load())
	res.TargetPromptTokens = s.req.TargetPromptTokens
}

// prepare builds req's body, its answer's stream and the HTTP request,
// traced into s: in a frame of its own, so its temporaries are not on the
// stack under the dial and the write.
//
//go:noinline
func (c *Client) prepare(ctx context.Context, req *measure.Request, s *sending) (Stream, *http.Request, error) {
	path, body, err := c.wire.Body(*req, c.cfg.ExtraBody)
	if err != nil {
		return nil, nil, err
	}
	s.built = true
	acc := c.wire.NewStream(*req)
	// The retry transport installs the trace (withStreamTrace). Both
	// values go in before the request is built: WithContext would copy it.
	ctx = withStreamTrace(withStaleCounter(ctx, &s.staleRetries), s.trace())
	hreq, err := c.newRequest(ctx, http.MethodPost, path, body)
	if err != nil {
		return nil, nil, err
	}
	return acc, hreq, nil
}

// unsent fills res for a request Do failed on, err, and the response to
// it if a redirect chain stopped with an error.
//
//go:noinline
func (c *Client) unsent(ctx context.Context, s *sending, err error, resp *http.Response, tl *measure.Timeline, res *measure.Result) {
	during := "connect"
	switch {
	case s.headBegun.Load():
		during = "read response headers"
	case s.wrote.Load():
		during = "await response"
	case s.gotConn.Load():
		during = "send request"
	}
	res.Err = c.classify(ctx, err, during)
	if resp != nil { // a redirect chain stopped with an error
		res.HTTPStatus, res.Err.Status = resp.StatusCode, resp.StatusCode
	}
	tl.End = time.Since(s.start)
	derive(res, tl)
}

// answer reads the answer to a request Do sent, resp, into res: the rest
// of stream, in a frame of its own, so its temporaries are not on the
// stack while the request is sent (and stream's frame, under the dial
// and the write, stays small enough for them to fit an 8 KB stack).
//
//go:noinline
func (c *Client) answer(ctx context.Context, s *sending, res *measure.Result, resp *http.Response, acc Stream, dl *deadlines) {
	req, start := s.req, s.start
	tl := acc.Timeline()
	tl.FirstByte(s.firstByte)
	res.HTTPStatus = resp.StatusCode
	// Until an answer body is read, a request has only what was measured.
	noBody := func() {
		tl.Body, tl.End = measure.BodyNone, time.Since(start)
		derive(res, tl)
	}

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		c.refused(resp, res, noBody)
		return
	}

	if err := checkBody(resp, req.Stream); err != nil {
		noBody()
		res.Err = c.fail(measure.ClassProtocol, resp.StatusCode, err.Error(), err)
		return
	}
	if !req.Stream {
		c.readJSON(ctx, resp, start, req, acc, res)
		return
	}
	// From here the answer is its body: the response, its header and the
	// request it answers (with the request's body and headers) are not
	// kept for as long as the stream lasts.
	body, status := resp.Body, resp.StatusCode
	resp = nil

	// The idle clock runs from the last token event: pings, comments and
	// empty or role-only deltas are no progress and must not keep a stalled
	// generation alive.
	toOrigin := start.Sub(dl.origin)
	var sinceToken, commentsAtToken int // events and comments since the last token event
	var streamErr error
	defer acc.End(res)
	tl.Body = measure.BodyStream
	parser := sse.NewParser(c.cfg.MaxLineBytes)
	emit := func(ev *sse.Event) error {
		had := tl.TokenEvents()
		if err := acc.Event(ev); err != nil {
			return err
		}
		if tl.TokenEvents() == had {
			sinceToken++
			return nil
		}
		sinceToken, commentsAtToken = 0, parser.Comments()
		// The first one ends prefill: the first-token clock stops and
		// the idle clock starts.
		dl.token(toOrigin + ev.At)
		return nil
	}
	var last time.Duration
	// Each read's bytes are parsed where they were read: the own reader
	// hands them over from inside its socket read (tsConn.readEach).
	rerr := readEach(body, &c.bufs, func(p []byte) error {
		if c.lateRead != nil {
			c.lateRead(p)
		}
		// Timestamp before parsing: arrival time, not parse time.
		last = arrival(s.conn.Load(), start, last, &tl.ArrivalClock)
		res.BytesReceived += int64(len(p))
		if err := parser.Feed(p, last, emit); err != nil {
			streamErr = err
			return err
		}
		return nil
	})
	switch {
	case streamErr != nil:
	case rerr == nil:
		if err := parser.Flush(last, emit); err != nil {
			streamErr = err
		}
	default:
		res.Err = c.classify(ctx, rerr, "read stream")
		if res.Err.Class == measure.ClassTimeoutIdle {
			res.Err.Message += fmt.Sprintf(" (%d events and %d comments since it)", sinceToken, parser.Comments()-commentsAtToken)
		}
	}
	tl.End = time.Since(start)
	tl.KeepAliveComments = parser.Comments()
	if streamErr != nil && res.Err == nil {
		res.Err = c.fail(answerClass(streamErr), 0, streamErr.Error(), streamErr)
	}
	if res.Err == nil && res.BytesReceived > 0 {
		// A clean close is an end only where the protocol says so.
		if err := acc.Finished(); err != nil {
			res.Err = c.fail(measure.ClassTruncated, status, err.Error(), err)
		}
	}
	if res.Err == nil && tl.TokenEvents() > 0 {
		if err := tl.CheckUsage(); err != nil {
			res.Err = c.fail(measure.ClassProtocol, status, err.Error(), err)
		}
	}
	derive(res, tl)
	if res.Err == nil && tl.TokenEvents() == 0 {
		// Usage alone is not an answer: nothing was streamed to time.
		err := fmt.Errorf("%w: the stream ended after %d bytes and %d events without a token event", ErrNoOutput, res.BytesReceived, res.SSEEvents)
		if res.BytesReceived == 0 {
			err = fmt.Errorf("%w: empty 200 body", ErrNoOutput)
		}
		res.Err = c.fail(measure.ClassProtocol, status, err.Error(), err)
	}
}

// refused fills res for an answer that is not a 2xx, noBody marking the
// request as one without a body; a frame of its own, so its temporaries
// stay off the stack of every open stream.
//
//go:noinline
func (c *Client) refused(resp *http.Response, res *measure.Result, noBody func()) {
	if resp.StatusCode >= 300 && resp.StatusCode <= 399 {
		noBody()
		msg := fmt.Sprintf("HTTP %d %s: redirect to %s not followed", resp.StatusCode, http.StatusText(resp.StatusCode), safeLocation(resp))
		if c.cfg.FollowRedirects != FollowSameOrigin {
			msg += " (follow_redirects: same_origin follows a 307/308 to the same origin)"
		}
		res.Err = c.fail(measure.ClassRedirect, resp.StatusCode, msg, nil)
		return
	}
	snip, _ := io.ReadAll(io.LimitReader(resp.Body, errorSnippetBytes+secretSlack))
	res.BytesReceived = int64(len(snip))
	// No token figures for a refused request: only what was measured.
	noBody()
	msg := fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	if s := strings.TrimSpace(c.excerpt(snip, errorSnippetBytes)); s != "" {
		msg += ": " + s
	}
	res.Err = c.fail(measure.ClassHTTPStatus, resp.StatusCode, msg, nil)
	res.Err.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), time.Now())
}

// derive fills res.Metrics from tl in a frame of its own: a temporary
// Metrics (a few hundred bytes) in stream's frame would sit on the stack
// of every open stream.
//
//go:noinline
func derive(res *measure.Result, tl *measure.Timeline) { res.Metrics = measure.Derive(tl) }

// deadlines are one request's timeouts on one timer: the first token's
// (streams only: start to the first token event), the idle one (between
// token events, once the first came) and the total. A token event only
// stores its arrival; the timer, when it fires, ends the request with the
// cause whose time has come, or arms itself again for the nearest one
// left. So the read path never touches the runtime's timer heap, and a
// request costs one timer, not three and a context.
type deadlines struct {
	first, idle, total time.Duration // 0: none
	ctx                context.Context
	cancel             context.CancelCauseFunc
	origin             time.Time // when the clocks started
	// last is the arrival of the last token event, in ns after origin
	// (at least 1); 0 until the first. Written by the reader, read by the
	// timer's goroutine.
	last  atomic.Int64
	timer atomic.Pointer[time.Timer]
}

func (d *deadlines) start() {
	d.origin = time.Now()
	if wait, _ := d.due(0); wait >= 0 {
		d.arm(wait)
	}
}

// token records the arrival of a token event, at after origin.
func (d *deadlines) token(at time.Duration) { d.last.Store(max(int64(at), 1)) }

// due is, now after origin, the cause whose time has come, else how long
// until the nearest deadline may have (-1: none is set). Before the first
// token the wait is at most the idle timeout: the token may come at any
// moment, and its idle deadline must not be passed by a timer armed for
// the first-token or total one.
func (d *deadlines) due(now time.Duration) (wait time.Duration, cause error) {
	wait = -1
	soonest := func(left time.Duration) {
		if wait < 0 || left < wait {
			wait = left
		}
	}
	if d.total > 0 {
		if now >= d.total {
			return 0, errTotal
		}
		soonest(d.total - now)
	}
	if last := time.Duration(d.last.Load()); last > 0 {
		if d.idle > 0 {
			// arrival may be the kernel's receive time, a wall-clock
			// offset a little behind the monotonic one: the timeout can
			// only run late.
			quiet := now - last
			if quiet >= d.idle {
				return 0, errIdle
			}
			soonest(d.idle - quiet)
		}
		return wait, nil
	}
	if d.first > 0 {
		if now >= d.first {
			return 0, errFirstToken
		}
		soonest(d.first - now)
	}
	if d.idle > 0 {
		soonest(d.idle)
	}
	return wait, nil
}

// arm checks after wait. A new timer each time keeps the callback from
// touching a timer another goroutine may be stopping.
func (d *deadlines) arm(wait time.Duration) {
	d.timer.Store(time.AfterFunc(wait, func() {
		if d.ctx.Err() != nil {
			return
		}
		wait, cause := d.due(time.Since(d.origin))
		switch {
		case cause != nil:
			d.cancel(cause)
		case wait >= 0:
			d.arm(wait)
		}
	}))
}

func (d *deadlines) stop() {
	if t := d.timer.Load(); t != nil {
		t.Stop()
	}
}

// checkBody refuses, before reading, a 200 that cannot be the answer asked
// for: a stream must be text/event-stream, a non-streamed answer JSON, and
// neither may be encoded (tollgate asks for identity: compression would
// hide arrival times).
func checkBody(resp *http.Response, stream bool) error {
	if enc := strings.TrimSpace(resp.Header.Get("Content-Encoding")); enc != "" && !strings.EqualFold(enc, "identity") {
		return fmt.Errorf("%w: Content-Encoding %q was not asked for and is not decoded", ErrBadBody, enc)
	}
	raw := resp.Header.Get("Content-Type")
	ct, _, _ := mime.ParseMediaType(raw)
	switch {
	case stream && ct != "text/event-stream":
		return fmt.Errorf("%w: a streamed request was answered with Content-Type %q, want text/event-stream", ErrBadBody, raw)
	case !stream && ct != "application/json" && !strings.HasSuffix(ct, "+json"):
		return fmt.Errorf("%w: a non-streamed request was answered with Content-Type %q, want application/json", ErrBadBody, raw)
	}
	return nil
}

// retryAfter parses a Retry-After header: delay-seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// arrival is when the bytes just read arrived, as an offset from start: the
// kernel's receive time when the connection has it (immune to the client
// being scheduled late), else now. It never runs backwards or past now.
// *clock is set to the clock it read (measure.ArrivalKernel or ArrivalRead).
func arrival(conn *tsConn, start time.Time, prev time.Duration, clock *string) time.Duration {
	now := time.Since(start)
	if conn != nil {
		if t, ok := conn.lastReceive(); ok {
			// t carries no monotonic reading, so this difference is of wall
			// clocks taken microseconds to milliseconds apart.
			if k := t.Sub(start); k > 0 && k <= now {
				*clock = measure.ArrivalKernel
				return max(k, prev)
			}
		}
	}
	*clock = measure.ArrivalRead
	return max(now, prev)
}
