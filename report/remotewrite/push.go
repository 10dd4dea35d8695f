package remotewrite

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/tollgate-dev/tollgate/internal/redact"
	"github.com/tollgate-dev/tollgate/report/view"
)

// DefaultTimeout bounds a push when the Client gives none: every attempt
// and the waits between them.
const DefaultTimeout = 30 * time.Second

// Attempts is how many times a push is sent at most: again after a
// connection error, a 5xx or a 429 (the remote-write spec asks senders to
// retry 5xx with a backoff, and never a 4xx but 429), within the timeout.
const Attempts = 3

// backoff is the wait before the second attempt; it doubles after.
const backoff = 250 * time.Millisecond

// maxBodyShown bounds what of a refusal's body a message quotes.
const maxBodyShown = 512

// ErrPush is what every failed push wraps.
var ErrPush = errors.New("remote write failed")

// ErrConfig is a remote-write target or credentials refused before
// anything is sent.
var ErrConfig = errors.New("invalid remote write configuration")

// StatusError is a receiver's answer that was not 2xx.
type StatusError struct {
	Code int
	// Body is the start of what it said, on one line.
	Body string
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("the receiver answered %d %s", e.Code, http.StatusText(e.Code))
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// Client pushes WriteRequests to one receiver.
type Client struct {
	// URL is the receiver's write endpoint
	// (http://prometheus:9090/api/v1/write).
	URL string
	// Header is sent with every push (a tenant, a token); Username and
	// Password, when Username is set, as basic auth.
	Header             http.Header
	Username, Password string
	// Timeout bounds the whole push; DefaultTimeout when 0.
	Timeout   time.Duration
	UserAgent string
	// HTTP is the client to send with; nil for one that follows no
	// redirect (credentials never go to another origin).
	HTTP *http.Client
}

// CheckURL refuses a URL that is not an absolute http(s) one.
func CheckURL(raw string) error {
	const want = "want an http:// or https:// URL, e.g. http://127.0.0.1:9090/api/v1/write"
	u, err := url.Parse(raw)
	if err != nil {
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err // its text quotes the URL, password and all
		}
		return fmt.Errorf("%w: %s: %w; %s", ErrConfig, redact.URL(raw), err, want)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("%w: %s: %s", ErrConfig, redact.URL(raw), want)
	}
	return nil
}

// ParseHeaders reads headers written as OTEL_EXPORTER_OTLP_HEADERS are:
// name=value pairs separated by commas, each value percent-decoded
// (Authorization=Bearer%20abc,X-Scope-OrgID=team-a). Headers the
// protocol sets itself are refused.
func ParseHeaders(s string) (http.Header, error) {
	h := http.Header{}
	for pair := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		name, value, ok := strings.Cut(pair, "=")
		name = strings.TrimSpace(name)
		if !ok || !validHeaderName(name) {
			return nil, fmt.Errorf("%w: headers: %q is not name=value with a header name", ErrConfig, strings.TrimSpace(name))
		}
		v, err := url.PathUnescape(strings.TrimSpace(value))
		if err != nil {
			return nil, fmt.Errorf("%w: headers: the value of %s is not percent-encoded text: %w", ErrConfig, name, errors.Unwrap(err))
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, fmt.Errorf("%w: headers: the value of %s holds a line break or NUL", ErrConfig, name)
		}
		switch http.CanonicalHeaderKey(name) {
		case "Content-Type", "Content-Encoding", "Content-Length", "Transfer-Encoding", "Host", "X-Prometheus-Remote-Write-Version":
			return nil, fmt.Errorf("%w: headers: %s is set by the remote-write protocol and cannot be given", ErrConfig, name)
		}
		h.Add(name, v)
	}
	return h, nil
}

// validHeaderName reports whether s is an HTTP token (RFC 9110).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > 0x7e || r <= ' ' || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", r) {
			return false
		}
	}
	return true
}

// Check refuses a client whose credentials conflict: basic auth from
// Username beside an Authorization header or a URL's user.
func (c *Client) Check() error {
	if err := CheckURL(c.URL); err != nil {
		return err
	}
	u, _ := url.Parse(c.URL)
	if c.Username == "" && c.Password != "" {
		return fmt.Errorf("%w: a password without a user name", ErrConfig)
	}
	if c.Username != "" && c.Header.Get("Authorization") != "" {
		return fmt.Errorf("%w: both basic auth and an Authorization header: give one", ErrConfig)
	}
	if c.Username != "" && u.User != nil {
		return fmt.Errorf("%w: both basic auth and a user in the URL: give one", ErrConfig)
	}
	return nil
}

// Secrets are the values a message about this client must never show:
// every header value (and the credential after its scheme word), the
// password, the URL's password and secret query values, and the
// basic-auth credential as it goes on the wire.
func (c *Client) Secrets() []string {
	var s []string
	for _, vs := range c.Header {
		for _, v := range vs {
			s = append(s, v)
			if f := strings.Fields(v); len(f) > 1 {
				s = append(s, f[len(f)-1])
			}
		}
	}
	if c.Password != "" {
		s = append(s, c.Password, base64.StdEncoding.EncodeToString([]byte(c.Username+":"+c.Password)))
	}
	s = append(s, redact.URLSecrets(c.URL)...)
	if u, err := url.Parse(c.URL); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			s = append(s, base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pw)))
		}
	}
	return s
}

// Push sends req, snappy-compressed, and waits for the receiver's 2xx,
// retrying as Attempts says, within the client's timeout. The error wraps
// ErrPush (and a *StatusError for an answer that was not 2xx, or
// context.DeadlineExceeded when no answer came in time); it never shows a
// secret (Secrets) nor a URL's password.
func (c *Client) Push(ctx context.Context, req *prompb.WriteRequest) error {
	data, err := req.Marshal()
	if err != nil {
		return fmt.Errorf("%w: encoding: %w", ErrPush, err)
	}
	body := snappy.Encode(nil, data)
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	red := redact.New(c.Secrets()...)
	wait := backoff
	var last error
	for attempt := 1; attempt <= Attempts; attempt++ {
		var retry bool
		retry, last = c.send(ctx, hc, body)
		if last == nil {
			return nil
		}
		if ctx.Err() != nil {
			last = fmt.Errorf("no answer within %s: %w", timeout, context.DeadlineExceeded)
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				last = ctx.Err()
			}
			break
		}
		if !retry || attempt == Attempts {
			if attempt > 1 {
				last = fmt.Errorf("%w (attempt %d of %d)", last, attempt, Attempts)
			}
			break
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
		wait *= 2
	}
	return red.Error(fmt.Errorf("%w: pushing to %s: %w", ErrPush, redact.URL(c.URL), last))
}

// send makes one attempt; retry says whether another may follow.
func (c *Client) send(ctx context.Context, hc *http.Client, body []byte) (retry bool, err error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	for k, vs := range c.Header {
		for _, v := range vs {
			hr.Header.Add(k, v)
		}
	}
	hr.Header.Set("Content-Encoding", "snappy")
	hr.Header.Set("Content-Type", "application/x-protobuf")
	hr.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	if c.UserAgent != "" {
		hr.Header.Set("User-Agent", c.UserAgent)
	}
	if c.Username != "" {
		hr.SetBasicAuth(c.Username, c.Password)
	}
	resp, err := hc.Do(hr)
	if err != nil {
		// url.Error quotes the URL, password and all; the message says
		// it once itself.
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return true, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
		return false, nil
	}
	shown, _ := io.ReadAll(io.LimitReader(resp.Body, maxBodyShown))
	text := strings.Join(strings.Fields(view.Clean(string(shown))), " ")
	return resp.StatusCode/100 == 5 || resp.StatusCode == http.StatusTooManyRequests, &StatusError{Code: resp.StatusCode, Body: text}
}
