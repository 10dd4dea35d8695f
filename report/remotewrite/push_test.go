package remotewrite

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// receiver is a remote-write endpoint that checks the protocol's headers,
// decodes what it got and answers status (with body).
type receiver struct {
	t      *testing.T
	status int
	body   string
	calls  atomic.Int32
	got    atomic.Pointer[prompb.WriteRequest]
	header atomic.Pointer[http.Header]
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc.calls.Add(1)
	h := r.Header.Clone()
	rc.header.Store(&h)
	for k, want := range map[string]string{"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf", "X-Prometheus-Remote-Write-Version": "0.1.0"} {
		if got := r.Header.Get(k); got != want {
			rc.t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		rc.t.Error(err)
	}
	data, err := snappy.Decode(nil, raw)
	if err != nil {
		rc.t.Errorf("body is not snappy: %v", err)
	}
	var req prompb.WriteRequest
	if err := req.Unmarshal(data); err != nil {
		rc.t.Errorf("body is not a WriteRequest: %v", err)
	}
	rc.got.Store(&req)
	w.WriteHeader(rc.status)
	_, _ = io.WriteString(w, rc.body)
}

func serve(t *testing.T, rc *receiver) string {
	rc.t = t
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	return srv.URL + "/api/v1/write"
}

func testRequest(t *testing.T) *prompb.WriteRequest {
	req, err := Build(richReport(), []Label{{"branch", "main"}})
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestPushDelivers(t *testing.T) {
	rc := &receiver{status: http.StatusNoContent}
	h, err := ParseHeaders("X-Scope-OrgID=team-a, Authorization=Bearer%20tok%2Bsecret")
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{URL: serve(t, rc), Header: h, UserAgent: "tollgate/test", Timeout: 5 * time.Second}
	want := testRequest(t)
	if err := c.Push(context.Background(), want); err != nil {
		t.Fatal(err)
	}
	got := rc.got.Load()
	if got == nil || len(got.Timeseries) != len(want.Timeseries) || got.Timeseries[5].String() != want.Timeseries[5].String() {
		t.Fatalf("the receiver got %d series, want %d the same", len(got.Timeseries), len(want.Timeseries))
	}
	hd := *rc.header.Load()
	if hd.Get("X-Scope-OrgID") != "team-a" || hd.Get("Authorization") != "Bearer tok+secret" || hd.Get("User-Agent") != "tollgate/test" {
		t.Errorf("headers %v", hd)
	}
}

func TestPushBasicAuth(t *testing.T) {
	rc := &receiver{status: http.StatusOK}
	c := &Client{URL: serve(t, rc), Username: "tollgate", Password: "pw"}
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	if err := c.Push(context.Background(), testRequest(t)); err != nil {
		t.Fatal(err)
	}
	r := &http.Request{Header: *rc.header.Load()}
	if u, p, ok := r.BasicAuth(); !ok || u != "tollgate" || p != "pw" {
		t.Errorf("basic auth %q %q %v", u, p, ok)
	}
}

// A 4xx is not sent again and is said with the receiver's words, without
// any secret it echoes; a 5xx is retried, then said.
func TestPushRefused(t *testing.T) {
	const secret = "tok-s3cret-value"
	for _, c := range []struct {
		status    int
		wantCalls int32
	}{{http.StatusBadRequest, 1}, {http.StatusUnauthorized, 1}, {http.StatusTooManyRequests, Attempts}, {http.StatusServiceUnavailable, Attempts}} {
		t.Run(http.StatusText(c.status), func(t *testing.T) {
			rc := &receiver{status: c.status, body: "out of order sample\nyou sent Authorization: Bearer " + secret + " and Basic dG9sbGdhdGU6cHctc2VjcmV0"}
			cl := &Client{URL: serve(t, rc), Header: http.Header{"Authorization": {"Bearer " + secret}}, Timeout: 10 * time.Second}
			err := cl.Push(context.Background(), testRequest(t))
			var se *StatusError
			if !errors.Is(err, ErrPush) || !errors.As(err, &se) || se.Code != c.status {
				t.Fatalf("got %v, want ErrPush with a StatusError %d", err, c.status)
			}
			if n := rc.calls.Load(); n != c.wantCalls {
				t.Errorf("%d attempts, want %d", n, c.wantCalls)
			}
			msg := err.Error()
			if strings.Contains(msg, secret) || !strings.Contains(msg, "out of order sample you sent") || strings.Contains(msg, "\n") {
				t.Errorf("message %q: want the receiver's words on one line, without the secret", msg)
			}
		})
	}
	t.Run("basic auth echoed", func(t *testing.T) {
		rc := &receiver{status: http.StatusForbidden, body: "no access for Basic dG9sbGdhdGU6cHctc2VjcmV0 (pw-secret)"}
		cl := &Client{URL: serve(t, rc), Username: "tollgate", Password: "pw-secret"}
		err := cl.Push(context.Background(), testRequest(t))
		if err == nil || strings.Contains(err.Error(), "pw-secret") || strings.Contains(err.Error(), "dG9sbGdhdGU6cHctc2VjcmV0") {
			t.Errorf("message %v shows the password", err)
		}
	})
}

// A receiver that never answers is given up at the timeout, saying so.
func TestPushDeadline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { conn.Close() }) // held open, never answered
		}
	}()
	cl := &Client{URL: "http://" + ln.Addr().String() + "/api/v1/write", Timeout: 300 * time.Millisecond}
	start := time.Now()
	err = cl.Push(context.Background(), testRequest(t))
	if !errors.Is(err, ErrPush) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within 300ms") {
		t.Fatalf("got %v, want ErrPush saying no answer within 300ms", err)
	}
	// The error says the timeout ended it (the receiver never answers,
	// so nothing else could); timers only fire late on a busy machine, so
	// the bound that cannot flip is the one from below.
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("gave up after %s, before the 300ms timeout", d)
	}
}

// A refused connection is retried, then said; a redirect is not followed.
func TestPushUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cl := &Client{URL: "http://user:hunter2@" + addr + "/api/v1/write", Timeout: 5 * time.Second}
	err = cl.Push(context.Background(), testRequest(t))
	if !errors.Is(err, ErrPush) || !strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "attempt 3 of 3") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("got %v, want ErrPush: connection refused after 3 attempts, no password", err)
	}

	var followed atomic.Bool
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { followed.Store(true) }))
	defer target.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	err = (&Client{URL: redirect.URL, Header: http.Header{"Authorization": {"Bearer x"}}}).Push(context.Background(), testRequest(t))
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusTemporaryRedirect || followed.Load() {
		t.Errorf("got %v (followed: %v), want the 307 itself", err, followed.Load())
	}
}

func TestParseHeaders(t *testing.T) {
	h, err := ParseHeaders(" A=1 ,X-Token=a%2Cb%3Dc,,X-Multi=1,X-Multi=2")
	if err != nil || h.Get("A") != "1" || h.Get("X-Token") != "a,b=c" || len(h.Values("X-Multi")) != 2 {
		t.Fatalf("got %v, %v", h, err)
	}
	for _, c := range []struct{ in, want string }{
		{"novalue", "not name=value"},
		{"bad name=1", "not name=value"},
		{"X-A=%zz", "not percent-encoded"},
		{"X-A=a%0Db", "line break"},
		{"Content-Encoding=gzip", "set by the remote-write protocol"},
		{"x-prometheus-remote-write-version=2.0.0", "set by the remote-write protocol"},
	} {
		if _, err := ParseHeaders(c.in); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want ErrConfig saying %q", c.in, err, c.want)
		}
	}
}

func TestClientCheck(t *testing.T) {
	for _, c := range []struct {
		cl   Client
		want string
	}{
		{Client{URL: "127.0.0.1:9090/api/v1/write"}, "want an http:// or https:// URL"},
		{Client{URL: "ftp://h/x"}, "want an http:// or https:// URL"},
		{Client{URL: "http://h/x", Password: "p"}, "a password without a user name"},
		{Client{URL: "http://h/x", Username: "u", Header: http.Header{"Authorization": {"Bearer t"}}}, "both basic auth and an Authorization header"},
		{Client{URL: "http://a:b@h/x", Username: "u"}, "both basic auth and a user in the URL"},
	} {
		if err := c.cl.Check(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want ErrConfig saying %q", c.cl, err, c.want)
		}
	}
}
