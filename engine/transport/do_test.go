package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Client.do calls the transport itself where no redirect is followed;
// what it answers must be what http.Client.Do answers: the same response,
// or an error with the same text that errors.Is and As see the same way.
func TestDoIsHTTPClientDo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/redirect":
			w.Header().Set("Location", "/elsewhere")
			w.WriteHeader(http.StatusTemporaryRedirect)
		case "/no-location":
			w.WriteHeader(http.StatusFound)
		case "/auth":
			_, _ = io.WriteString(w, r.Header.Get("Authorization"))
		default:
			_, _ = io.WriteString(w, "data: ok\n\n")
		}
	}))
	defer srv.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + closed.Addr().String()
	_ = closed.Close()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	withUser := strings.Replace(srv.URL, "http://", "http://user:secret@", 1)
	tests := []struct {
		name, base, path string
		ctx              context.Context
		wantErr          bool
		is               error
	}{
		{name: "an answer", base: srv.URL, path: "/v1/chat/completions"},
		{name: "a redirect is not followed", base: srv.URL, path: "/redirect"},
		{name: "a 3xx without a Location", base: srv.URL, path: "/no-location"},
		{name: "a user in the URL is Basic auth", base: withUser, path: "/auth"},
		{name: "a refused connection", base: refused, path: "/x", wantErr: true, is: syscall.ECONNREFUSED},
		{name: "https to a plain HTTP server", base: strings.Replace(srv.URL, "http://", "https://", 1), path: "/x", wantErr: true, is: http.ErrSchemeMismatch},
		{name: "a context already done", base: srv.URL, path: "/x", ctx: cancelled, wantErr: true, is: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(Config{BaseURL: tt.base}, doWire{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			type answer struct {
				status int
				body   string
				err    error
			}
			send := func(do func(*http.Request) (*http.Response, error)) answer {
				req, err := c.newRequest(ctx, http.MethodPost, tt.path, []byte(`{"a":1}`))
				if err != nil {
					t.Fatal(err)
				}
				resp, err := do(req)
				if err != nil {
					return answer{err: err}
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return answer{status: resp.StatusCode, body: string(b)}
			}
			want, got := send(c.http.Do), send(c.do)
			if (got.err != nil) != tt.wantErr || (want.err != nil) != tt.wantErr {
				t.Fatalf("errors: do %v, http.Client.Do %v; want an error: %v", got.err, want.err, tt.wantErr)
			}
			if got.status != want.status || got.body != want.body {
				t.Errorf("do answered %d %q, http.Client.Do %d %q", got.status, got.body, want.status, want.body)
			}
			if !tt.wantErr {
				return
			}
			if got.err.Error() != want.err.Error() {
				t.Errorf("do's error %q\nhttp.Client.Do's %q", got.err, want.err)
			}
			var gu, wu *url.Error
			if !errors.As(got.err, &gu) || !errors.As(want.err, &wu) || gu.Op != wu.Op || gu.URL != wu.URL {
				t.Errorf("url.Error: do %+v, http.Client.Do %+v", gu, wu)
			}
			if !errors.Is(got.err, tt.is) || !errors.Is(want.err, tt.is) {
				t.Errorf("errors.Is(%v): do %v, http.Client.Do %v", tt.is, errors.Is(got.err, tt.is), errors.Is(want.err, tt.is))
			}
		})
	}
}

type doWire struct{ nameWire }

func (doWire) Header(http.Header, string) {}

// A request's buffer goes back to the pool once written and the next
// request writes into it: concurrent requests of different sizes (one past
// what the pool keeps) must each reach the server as they were built, and
// a resend after a write that wrote nothing (an idle connection the server
// closed) must send the same bytes again.
func TestRequestBuffersAreEachRequestsOwn(t *testing.T) {
	var closeAfter atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if closeAfter.Load() {
			// Answer, then close unannounced: the client keeps the
			// connection idle as any keep-alive one.
			conn, rw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			_, _ = fmt.Fprintf(rw, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(b), b)
			_ = rw.Flush()
			_ = conn.Close()
			return
		}
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL, MaxConns: 8}, doWire{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	send := func(body []byte) error {
		ctx := withStreamTrace(context.Background(), &httptrace.ClientTrace{})
		req, err := c.newRequest(ctx, http.MethodPost, "/echo", body)
		if err != nil {
			return err
		}
		resp, err := c.do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		got, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, body) {
			return fmt.Errorf("sent %d bytes (%.20q…), the server read %d (%.20q…)", len(body), body, len(got), got)
		}
		return nil
	}
	sizes := []int{1, 300, 5000, maxPooledWriteBytes + 1}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				body := bytes.Repeat([]byte{byte('a' + (g*40+i)%26)}, sizes[(g+i)%len(sizes)])
				if err := send(body); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// The server closes after this answer; the next request takes the
	// idle connection, finds it closed before writing, and is sent again.
	closeAfter.Store(true)
	if err := send([]byte("before the close")); err != nil {
		t.Fatal(err)
	}
	closeAfter.Store(false)
	// Let the close reach the client first (usually): the request then
	// finds it before writing. If not, the retry transport sends it again
	// after the failed read; either way the same bytes go out again.
	time.Sleep(50 * time.Millisecond)
	for i := range 5 {
		if err := send(bytes.Repeat([]byte{byte('0' + i)}, 700)); err != nil {
			t.Fatal(err)
		}
	}
}
