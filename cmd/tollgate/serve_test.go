package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/engine/sim"
)

// startServeBin runs `tollgate serve` and returns its base URL.
func startServeBin(t *testing.T, args ...string) (*exec.Cmd, string) {
	t.Helper()
	return startServeOf(t, bin, args...)
}

// startServeWith runs `tollgate serve` of the binary b and returns its base
// URL; it is stopped when the test ends.
func startServeWith(t *testing.T, b string, args ...string) string {
	t.Helper()
	_, url := startServeOf(t, b, args...)
	return url
}

func startServeOf(t *testing.T, b string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd, lines := startServeLines(t, b, 1, args...)
	line := lines[0]
	i := strings.Index(line, "http://")
	if i < 0 {
		t.Fatalf("serve printed %q", line)
	}
	return cmd, strings.Fields(line[i:])[0]
}

// startServeLines runs `tollgate serve` of the binary b and returns the
// first n lines it printed; the rest is drained, and it is stopped when
// the test ends.
func startServeLines(t *testing.T, b string, n int, args ...string) (*exec.Cmd, []string) {
	t.Helper()
	cmd := exec.Command(b, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	rd := bufio.NewReader(stdout)
	var lines []string
	for range n {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("serve: %v after %q", err, lines)
		}
		lines = append(lines, line)
	}
	go func() { _, _ = io.Copy(io.Discard, rd) }()
	return cmd, lines
}

// streamChat sends one streamed chat request named id and drains it.
func streamChat(t *testing.T, url, id string) {
	t.Helper()
	body := fmt.Sprintf(`{"messages":[{"role":"user","content":"hi"}],"stream":true,"max_tokens":4,"ignore_eos":true,"request_id":%q}`, id)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Request-Id") != "chatcmpl-"+id {
		t.Fatalf("status %d, X-Request-Id %q", resp.StatusCode, resp.Header.Get("X-Request-Id"))
	}
}

// TestServeRequestLog checks --request-log through the real binary: a
// clean stop flushes every line; a killed server leaves only whole lines,
// up to its last timed flush.
func TestServeRequestLog(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		sig       os.Signal
		timedLast bool // wait past the flush interval before the last request
		wantIDs   []string
	}{
		{"interrupted: flushed on close", os.Interrupt, false, []string{"a", "b", "c"}},
		{"killed: whole lines, as of the last write", syscall.SIGKILL, true, []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "requests.jsonl")
			cmd, url := startServeBin(t, "--request-log", path, "--decode-step", "1ms", "--ttft-base", "0")
			for i, id := range tt.wantIDs {
				if tt.timedLast && i == len(tt.wantIDs)-1 {
					time.Sleep(1100 * time.Millisecond) // past the 1 s flush interval
				}
				streamChat(t, url, id)
			}
			if tt.sig == syscall.SIGKILL {
				// The line is added after the response ends; give it a moment.
				time.Sleep(200 * time.Millisecond)
			}
			if err := cmd.Process.Signal(tt.sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			if tt.sig == os.Interrupt && err != nil {
				t.Fatalf("serve did not exit cleanly: %v", err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) == 0 || b[len(b)-1] != '\n' {
				t.Fatalf("log is empty or ends mid-line: %q", b)
			}
			var got []string
			for _, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
				var r sim.RequestRecord
				if err := json.Unmarshal(line, &r); err != nil {
					t.Fatalf("line %q: %v", line, err)
				}
				if r.Tokens != 4 || r.FirstTokenSendUnixNs < r.ArrivalUnixNs || r.LastTokenSendUnixNs < r.FirstTokenSendUnixNs {
					t.Errorf("record %+v", r)
				}
				got = append(got, strings.TrimPrefix(r.ID, "chatcmpl-"))
			}
			if strings.Join(got, ",") != strings.Join(tt.wantIDs, ",") {
				t.Errorf("logged ids %v, want %v", got, tt.wantIDs)
			}
		})
	}
}

// A 0 given on the command line means none, not the default.
func TestServeFlagZeroMeansNone(t *testing.T) {
	t.Parallel()
	fs, get := serveFlags(io.Discard)
	if err := fs.Parse([]string{"--decode-step-per-seq", "0"}); err != nil {
		t.Fatal(err)
	}
	_, cfg, err := get()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DecodeStepPerSeq != time.Nanosecond {
		t.Errorf("DecodeStepPerSeq = %v, want 1ns (none)", cfg.DecodeStepPerSeq)
	}
	if cfg.DecodeStep != sim.DefaultConfig().DecodeStep {
		t.Errorf("DecodeStep = %v, want the default", cfg.DecodeStep)
	}
}

// A step of 0 is none, and the start-up line says 0, not the nanosecond
// that spells it; a negative one is an invalid invocation naming its flag.
func TestServeDecodeStepZeroAndNegative(t *testing.T) {
	t.Parallel()
	_, lines := startServeLines(t, bin, 2, "--decode-step", "0", "--decode-step-per-seq", "1ms")
	if want := "decode: 0s per step + 1ms per extra running sequence = 31ms per token at 32 streams, 255ms at 256\n"; lines[1] != want {
		t.Errorf("serve said %q, want %q", lines[1], want)
	}
	for _, tc := range []struct{ name, flag string }{
		{"negative decode step", "--decode-step=-1ms"},
		{"negative step per sequence", "--decode-step-per-seq=-1ms"},
		{"negative ttft base", "--ttft-base=-1ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tollgate(t, "serve", "--addr", "127.0.0.1:0", tc.flag)
			name, value, _ := strings.Cut(tc.flag, "=")
			if want := name + " " + value + ": want 0 (none) or a positive duration"; r.code != ExitInvalid || !strings.Contains(r.stderr, want) {
				t.Fatalf("exit %d, want %d with %q\n%s", r.code, ExitInvalid, want, r.stderr)
			}
		})
	}
}

// An --addr no machine could listen on is an invalid invocation (2); a
// well-formed one that cannot be bound here is a failed run (3).
func TestServeAddr(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tc := range []struct {
		name, addr string
		code       int
		stderr     string
	}{
		{"host and port out of range", "999.1.1.1:99999", ExitInvalid, `port "99999" is not a number from 0 to 65535`},
		{"port out of range", "127.0.0.1:65536", ExitInvalid, "is not a number from 0 to 65535"},
		{"negative port", "127.0.0.1:-1", ExitInvalid, "is not a number from 0 to 65535"},
		{"port not a number", "127.0.0.1:http", ExitInvalid, "is not a number"},
		{"no port", "127.0.0.1", ExitInvalid, "missing port in address"},
		{"dotted quad out of range", "999.1.1.1:8000", ExitInvalid, `host "999.1.1.1" is neither an IP address nor a host name`},
		{"bad character in host", "ex_ample.com:8000", ExitInvalid, "is neither an IP address nor a host name"},
		{"in use", ln.Addr().String(), ExitNotJudged, "address already in use"},
		{"not a local address", "192.0.2.1:0", ExitNotJudged, "cannot assign requested address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tollgate(t, "serve", "--addr", tc.addr)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("exit %d, want %d with %q\n%s", r.code, tc.code, tc.stderr, r.stderr)
			}
		})
	}
}

// --idle-timeout is a positive duration: 0 would be the simulator's
// default, not "none", so it is refused with the other invalid values.
func TestServeIdleTimeoutMustBePositive(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ flag, shown string }{{"0", "0s"}, {"-1s", "-1s"}} {
		t.Run(tc.flag, func(t *testing.T) {
			r := tollgate(t, "serve", "--addr", "127.0.0.1:0", "--idle-timeout", tc.flag)
			if want := "--idle-timeout " + tc.shown + ": want a positive duration"; r.code != ExitInvalid || !strings.Contains(r.stderr, want) {
				t.Fatalf("exit %d, want %d with %q\n%s", r.code, ExitInvalid, want, r.stderr)
			}
		})
	}
}

func TestCheckAddrAccepts(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"127.0.0.1:0", ":8000", "localhost:8000", "[::1]:8000", "[fe80::1%lo]:0", "my-host.example.:65535"} {
		if err := checkAddr(addr); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
}
