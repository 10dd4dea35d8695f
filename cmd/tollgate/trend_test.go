package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// serveStep starts tollgate serve on a free port at a decode step and
// returns its URL and process (killed when the test ends).
func serveStep(t *testing.T, step string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(perfBin, "serve", "--addr", "127.0.0.1:0", "--decode-step", step)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	buf := make([]byte, 256)
	n, err := stdout.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	line := string(buf[:n])
	i := strings.Index(line, "http://")
	if i < 0 {
		t.Fatalf("serve printed %q", line)
	}
	return strings.Fields(line[i:])[0], cmd
}

// Five nights of testdata/trend.yaml against tollgate serve, the fourth
// against a server three times slower: the trend marks that night alone a
// regression, exactly where tollgate compare of each night with the one
// before, under the same --fail-on, exits 1.
func TestReportTrendMarksWhatCompareFails(t *testing.T) {
	t.Parallel()
	fast, _ := serveStep(t, "5ms")
	slow, _ := serveStep(t, "15ms")
	dir := t.TempDir()
	nights := filepath.Join(dir, "nightly")
	var files []string
	for i := 1; i <= 5; i++ {
		u := fast
		if i == 4 {
			u = slow
		}
		f := filepath.Join(nights, fmt.Sprintf("night-%d.json", i))
		if r := tollgate(t, "run", "cmd/tollgate/testdata/trend.yaml", "-q", "--set", "vars.base_url="+u, "--json-out", f); r.code != 0 {
			t.Fatalf("night %d: exit %d\n%s", i, r.code, r.stderr)
		}
		files = append(files, f)
	}
	const failOn = "tpot_ms.p50:+50%"
	page := filepath.Join(dir, "trend.html")
	r := tollgate(t, "report", "--trend", nights, "--fail-on", failOn, "--html", page, "--markdown", "-")
	if r.code != 0 {
		t.Fatalf("report --trend: exit %d\n%s", r.code, r.stderr)
	}
	if st, err := os.Stat(page); err != nil || st.Size() < 10000 {
		t.Errorf("trend page: %v", err)
	}
	for i := 1; i < 5; i++ {
		c := tollgate(t, "compare", files[i-1], files[i], "--fail-on", failOn)
		row := fmt.Sprintf("| %d | regression | runs.server.phases.decode.tpot_ms.p50 |", i+1)
		marked := strings.Contains(r.stdout, row)
		if marked != (c.code == ExitGateFailed) {
			t.Errorf("night %d: marked %v, compare exit %d\n%s", i+1, marked, c.code, c.stdout)
		}
		if marked != (i+1 == 4) {
			t.Errorf("night %d marked %v; night 4 alone ran 3× slower\n%s", i+1, marked, r.stdout)
		}
	}
	if n := strings.Count(r.stdout, "| regression |"); n != 1 {
		t.Errorf("%d regressions marked, want 1:\n%s", n, r.stdout)
	}
}

// Bad input to --trend exits 2 with a message that names it.
func TestReportTrendBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	one := filepath.Join(dir, "one.json")
	if r := tollgate(t, "run", example, "-q", "--json-out", one); r.code != 0 {
		t.Fatalf("run: exit %d %s", r.code, r.stderr)
	}
	notReport := filepath.Join(dir, "notes.json")
	empty := filepath.Join(dir, "empty")
	for _, f := range []struct {
		path, body string
	}{{notReport, `{"hello": "world"}`}} {
		if err := os.WriteFile(f.path, []byte(f.body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "trend.html")
	other := filepath.Join(dir, "other.json")
	if r := tollgate(t, "run", "cmd/tollgate/testdata/small-load.yaml", "-q", "--json-out", other); r.code != 0 {
		t.Fatalf("run: exit %d %s", r.code, r.stderr)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a file that is no report", []string{one, notReport}, "not a tollgate report"},
		{"a directory with nothing", []string{empty}, "holds no *.json file"},
		{"one report", []string{one}, "a trend needs at least two reports of one scenario"},
		{"two scenarios, one report each", []string{one, other}, "no two of the same scenario"},
		{"no such file", []string{filepath.Join(dir, "missing.json")}, "no such file"},
		{"a foreign result alone", []string{"report/foreign/testdata/vllm-serve-summary.json"}, "a trend needs at least two reports"},
		{"nothing to write", []string{one, one}, "nothing to write"},
		{"a format a trend has not", []string{one, one, "--junit", filepath.Join(dir, "j.xml")}, "--junit: a trend is written as --html or --markdown only"},
		{"a bad --fail-on", []string{one, one, "--fail-on", "ttft_ms.p50:10%"}, "needs a sign"},
		{"--fail-on without --trend", []string{"report", one, "--fail-on", "ttft_ms.p50:+10%", "--html", out}, "add --trend"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"report", "--trend"}, tc.args...)
			if tc.args[0] == "report" {
				args = tc.args
			}
			if tc.name != "nothing to write" && !strings.Contains(strings.Join(args, " "), "--junit") {
				args = append(args, "--html", out)
			}
			r := tollgate(t, args...)
			if r.code != ExitInvalid || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, want %d with %q:\n%s", r.code, ExitInvalid, tc.want, r.stderr)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s written on bad input", out)
			}
		})
	}
}
