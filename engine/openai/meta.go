package openai

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// get fetches path, keeping at most limit bytes of the body.
func (c *Client) get(ctx context.Context, path string, limit int64) (status int, body []byte, truncated bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.auxTimeout())
	defer cancel()
	req, err := c.newRequest(ctx, http.MethodGet, path, nil)
	if err != nil {
		return 0, nil, false, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, false, fmt.Errorf("GET %s: %w", c.base+path, err)
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return resp.StatusCode, nil, false, fmt.Errorf("GET %s: read body: %w", c.base+path, err)
	}
	if int64(len(body)) > limit {
		body, truncated = body[:limit], true
	}
	return resp.StatusCode, body, truncated, nil
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
	for {
		ready, why := c.probeReady(ctx)
		if ready {
			return nil
		}
		last = why
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("openai: %s not ready by %s; last failure: %s: %w",
				c.redact(c.base), deadline.Format(time.RFC3339), c.redact(last), ctx.Err())
		case <-t.C:
		}
		wait = min(wait*2, time.Second)
	}
}

func (c *Client) probeReady(ctx context.Context) (bool, string) {
	status, body, _, err := c.get(ctx, "/health", errorSnippetBytes)
	if err != nil {
		return false, err.Error()
	}
	if ok2xx(status) {
		return true, ""
	}
	if !absent(status) {
		return false, fmt.Sprintf("GET %s/health: HTTP %d %s", c.base, status, strings.TrimSpace(snippet(body, 200)))
	}
	status, body, _, err = c.get(ctx, "/v1/models", errorSnippetBytes)
	if err != nil {
		return false, err.Error()
	}
	if ok2xx(status) {
		return true, ""
	}
	return false, fmt.Sprintf("GET %s/v1/models: HTTP %d %s", c.base, status, strings.TrimSpace(snippet(body, 200)))
}

// Models returns the model ids from /v1/models, in server order; the first is
// the natural default.
func (c *Client) Models(ctx context.Context) ([]string, error) {
	status, body, _, err := c.get(ctx, "/v1/models", jsonBodyBytes)
	if err != nil {
		return nil, fmt.Errorf("openai: list models: %s", c.redact(err.Error()))
	}
	if !ok2xx(status) {
		return nil, fmt.Errorf("openai: list models: HTTP %d: %s", status, c.redact(snippet(body, 200)))
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

// Metadata reads the optional metadata endpoints. It never fails: each path
// gets an entry, with a note when the endpoint is absent or erred.
func (c *Client) Metadata(ctx context.Context) map[string]MetadataEntry {
	paths := MetadataPaths()
	out := make(map[string]MetadataEntry, len(paths))
	for _, p := range paths {
		status, body, truncated, err := c.get(ctx, p, metadataBytes)
		e := MetadataEntry{Status: status}
		switch {
		case err != nil:
			e.Note = "error: " + c.redact(err.Error())
		case absent(status):
			e.Note = fmt.Sprintf("absent: %d", status)
		case !ok2xx(status):
			e.Note = fmt.Sprintf("HTTP %d", status)
			e.Text = c.redact(snippet(body, errorSnippetBytes))
		case !truncated && json.Valid(body):
			e.JSON = json.RawMessage(c.redact(string(body)))
		default:
			e.Text = c.redact(string(body))
			if truncated {
				e.Note = fmt.Sprintf("truncated at %d bytes", metadataBytes)
			}
		}
		out[p] = e
	}
	return out
}

// ScrapeMetrics reads /metrics (Prometheus text format) into name{labels} →
// value; see ParsePrometheus.
func (c *Client) ScrapeMetrics(ctx context.Context) (map[string]float64, error) {
	status, body, truncated, err := c.get(ctx, "/metrics", 64<<20)
	if err != nil {
		return nil, fmt.Errorf("openai: scrape metrics: %s", c.redact(err.Error()))
	}
	if !ok2xx(status) {
		return nil, fmt.Errorf("openai: scrape metrics: HTTP %d", status)
	}
	if truncated {
		return nil, errors.New("openai: scrape metrics: body over 64 MiB")
	}
	m, err := ParsePrometheus(strings.NewReader(string(body)))
	if err != nil {
		return nil, fmt.Errorf("openai: scrape metrics: %w", err)
	}
	return m, nil
}

// ParsePrometheus parses the Prometheus text exposition format (and the
// OpenMetrics subset servers emit) into a map keyed by
// `name{label="value",...}` with labels sorted by name and values re-escaped,
// or the bare name when there are no labels. Comments, HELP and TYPE lines are
// skipped; NaN and ±Inf parse; timestamps and exemplars are ignored.
func ParsePrometheus(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		key, v, err := parseSample(line)
		if err != nil {
			return nil, fmt.Errorf("metrics line %d: %w: %q", n, err, snippet([]byte(line), 120))
		}
		out[key] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	return out, nil
}

func parseSample(line string) (string, float64, error) {
	i := strings.IndexAny(line, "{ \t")
	if i <= 0 {
		return "", 0, errors.New("no metric name or value")
	}
	name, rest := line[:i], line[i:]
	var labels [][2]string
	if rest[0] == '{' {
		rest = rest[1:]
		for {
			rest = strings.TrimLeft(rest, " \t")
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			eq := strings.IndexByte(rest, '=')
			if eq <= 0 {
				return "", 0, errors.New("bad label")
			}
			lname := strings.TrimSpace(rest[:eq])
			rest = strings.TrimLeft(rest[eq+1:], " \t")
			if !strings.HasPrefix(rest, `"`) {
				return "", 0, errors.New("label value not quoted")
			}
			var sb strings.Builder
			j, closed := 1, false
			for j < len(rest) && !closed {
				switch c := rest[j]; {
				case c == '\\' && j+1 < len(rest):
					switch rest[j+1] {
					case 'n':
						sb.WriteByte('\n')
					case '\\', '"':
						sb.WriteByte(rest[j+1])
					default:
						sb.WriteByte(c)
						sb.WriteByte(rest[j+1])
					}
					j += 2
				case c == '"':
					closed = true
					j++
				default:
					sb.WriteByte(c)
					j++
				}
			}
			if !closed {
				return "", 0, errors.New("unterminated label value")
			}
			labels = append(labels, [2]string{lname, sb.String()})
			rest = strings.TrimLeft(rest[j:], " \t")
			switch {
			case strings.HasPrefix(rest, ","):
				rest = rest[1:]
			case strings.HasPrefix(rest, "}"):
			default:
				return "", 0, errors.New("expected , or } after label")
			}
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", 0, errors.New("no value")
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return "", 0, fmt.Errorf("bad value: %w", err)
	}
	// fields[1] may be a timestamp and "# {...}" an exemplar: both ignored.
	if len(labels) == 0 {
		return name, v, nil
	}
	sort.Slice(labels, func(a, b int) bool { return labels[a][0] < labels[b][0] })
	var sb strings.Builder
	sb.WriteString(name)
	sb.WriteByte('{')
	for k, l := range labels {
		if k > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(l[0])
		sb.WriteString(`="`)
		sb.WriteString(labelEscaper.Replace(l[1]))
		sb.WriteByte('"')
	}
	sb.WriteByte('}')
	return sb.String(), v, nil
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// Diff returns after − before for every series in after; a series missing
// from before counts from 0 (a counter that appeared during the run).
// Meaningful for counters; for gauges it is the change.
func Diff(before, after map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(after))
	for k, v := range after {
		out[k] = v - before[k]
	}
	return out
}
