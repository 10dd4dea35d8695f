package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/internal/textsafe"
)

// get fetches path within wait (Client.wait of it), keeping at most
// limit bytes of the body.
func (c *Client) get(ctx context.Context, path string, limit int64, wait time.Duration) (status int, body []byte, truncated bool, err error) {
	d := c.wait(wait)
	cctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	req, err := c.newRequest(cctx, http.MethodGet, path, nil)
	if err != nil {
		return 0, nil, false, err
	}
	what := "GET " + c.base + path
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, false, c.auxError(ctx, cctx, d, what, err)
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return resp.StatusCode, nil, false, c.auxError(ctx, cctx, d, what+": read body", err)
	}
	if int64(len(body)) > limit {
		body, truncated = body[:limit], true
	}
	return resp.StatusCode, body, truncated, nil
}

// auxError is the error of a call around the run (what: "GET url"): its
// deadline d, when that is what ended it (cctx's, not the caller's ctx),
// is ErrNoAnswer naming d; any other is err, its message made safe.
func (c *Client) auxError(ctx, cctx context.Context, d time.Duration, what string, err error) error {
	if ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w within %s: %w", c.redact(what), ErrNoAnswer, d, context.DeadlineExceeded)
	}
	return c.safeErr(fmt.Errorf("%s: %w", what, err))
}

func ok2xx(status int) bool { return status >= 200 && status <= 299 }

// absent reports statuses that mean "this server has no such endpoint".
func absent(status int) bool {
	return status == http.StatusNotFound || status == http.StatusMethodNotAllowed || status == http.StatusNotImplemented
}

// WaitReady polls /health (falling back to /v1/models when the server has no
// /health) until one answers 2xx or the deadline passes. A /health that
// exists but says 503 (model loading) is waited on, not bypassed.
func (c *Client) WaitReady(ctx context.Context, deadline time.Time) error {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	wait := 100 * time.Millisecond
	var last string
	var lastErr error
	for {
		ready, why, refused, cause := c.probeReady(ctx)
		if ready {
			return nil
		}
		if refused {
			// Waiting does not change credentials: say so now, not after
			// the whole ready timeout.
			return fmt.Errorf("openai: %s refuses the request's credentials: %s (check api_key_env and headers): %w",
				c.redact(c.base), c.redact(why), ErrUnauthorized)
		}
		if ctx.Err() == nil || last == "" {
			// (A probe the deadline cut short says nothing of the server:
			// the failure before it stands.)
			last, lastErr = why, cause
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return &notReadyError{
				msg: fmt.Sprintf("openai: %s not ready by %s; last failure: %s: %v",
					c.redact(c.base), deadline.Format(time.RFC3339), c.redact(last), ctx.Err()),
				errs: slices.DeleteFunc([]error{ctx.Err(), lastErr}, func(e error) bool { return e == nil }),
			}
		case <-t.C:
		}
		wait = min(wait*2, time.Second)
	}
}

// notReadyError is a server not ready by the deadline: its text says
// what failed last; it wraps the deadline's error and the last request's
// own (so errors.Is finds, say, syscall.ECONNREFUSED).
type notReadyError struct {
	msg  string
	errs []error
}

func (e *notReadyError) Error() string   { return e.msg }
func (e *notReadyError) Unwrap() []error { return e.errs }

// probeReady asks /health, then /v1/models when /health is absent or
// wants credentials (some gateways guard only /v1). refused says both
// answered 401 or 403: the server is up and will not take these
// credentials. cause is the request's error when none was answered.
func (c *Client) probeReady(ctx context.Context) (ready bool, why string, refused bool, cause error) {
	status, body, _, err := c.get(ctx, "/health", errorSnippetBytes+secretSlack, c.waits.aux)
	if err != nil {
		return false, err.Error(), false, err
	}
	if ok2xx(status) {
		return true, "", false, nil
	}
	if !absent(status) && !denied(status) {
		return false, fmt.Sprintf("GET %s/health: HTTP %d %s", c.base, status, strings.TrimSpace(c.excerpt(body, 200))), false, nil
	}
	status, body, _, err = c.get(ctx, "/v1/models", errorSnippetBytes+secretSlack, c.waits.aux)
	if err != nil {
		return false, err.Error(), false, err
	}
	if ok2xx(status) {
		return true, "", false, nil
	}
	return false, fmt.Sprintf("GET %s/v1/models: HTTP %d %s", c.base, status, strings.TrimSpace(c.excerpt(body, 200))), denied(status), nil
}

func denied(status int) bool {
	return status == http.StatusUnauthorized || status == http.StatusForbidden
}

// ErrUnauthorized is measure.ErrCredentialsRefused.
var ErrUnauthorized = measure.ErrCredentialsRefused

// Models returns the model ids from /v1/models, in server order; the first is
// the natural default.
func (c *Client) Models(ctx context.Context) ([]string, error) {
	status, body, _, err := c.get(ctx, "/v1/models", jsonBodyBytes, c.waits.models)
	if err != nil {
		return nil, fmt.Errorf("openai: list models: %w", err)
	}
	if !ok2xx(status) {
		return nil, fmt.Errorf("openai: list models: HTTP %d: %s", status, c.excerpt(body, 200))
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
		// llama.cpp also sends a "models" list; used when data is empty.
		Models []struct {
			Name  string `json:"name"`
			Model string `json:"model"`
		} `json:"models"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("openai: list models: decode: %w", err)
	}
	var ids []string
	for _, m := range list.Data {
		if m.ID != "" {
			ids = append(ids, m.ID)
		}
	}
	if len(ids) == 0 {
		for _, m := range list.Models {
			if id := cmp(m.Model, m.Name); id != "" {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		return nil, errors.New("openai: list models: the server lists no model")
	}
	return ids, nil
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// MetadataPaths lists the optional endpoints Metadata reads.
func MetadataPaths() []string {
	return []string{"/health", "/v1/models", "/v1/cache/status", "/v1/stats", "/version"}
}

// Metadata reads the optional metadata endpoints, all at once, each within
// MetadataTimeout: a server that answers none of them delays the run by
// that much. It never fails: each path gets an entry, with a note when the
// endpoint is absent, erred or did not answer.
func (c *Client) Metadata(ctx context.Context) map[string]measure.MetadataEntry {
	paths := MetadataPaths()
	entries := make([]measure.MetadataEntry, len(paths))
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Go(func() { entries[i] = c.metadataEntry(ctx, p) })
	}
	wg.Wait()
	out := make(map[string]measure.MetadataEntry, len(paths))
	for i, p := range paths {
		out[p] = entries[i]
	}
	return out
}

func (c *Client) metadataEntry(ctx context.Context, path string) measure.MetadataEntry {
	status, body, truncated, err := c.get(ctx, path, metadataBytes, c.waits.metadata)
	e := measure.MetadataEntry{Status: status}
	switch {
	case err != nil:
		e.Note = "error: " + err.Error()
	case absent(status):
		e.Note = fmt.Sprintf("absent: %d", status)
	case !ok2xx(status):
		e.Note = fmt.Sprintf("HTTP %d", status)
		e.Text = c.excerpt(body, errorSnippetBytes)
	case !truncated && json.Valid(body):
		e.JSON = json.RawMessage(c.redact(string(body)))
	default:
		e.Text = textsafe.Clean(c.redact(string(body)))
		if truncated {
			e.Note = fmt.Sprintf("truncated at %d bytes", metadataBytes)
		}
	}
	return e
}
