package report

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestNearestRank(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []float64
		p      int
		want   float64
	}{
		{name: "one value", values: []float64{7}, p: 99, want: 7},
		{name: "four values p50 is the 2nd", values: []float64{4, 1, 3, 2}, p: 50, want: 2},
		{name: "four values p95 is the 4th", values: []float64{1, 2, 3, 4}, p: 95, want: 4},
		{name: "ten values p90 is the 9th", values: []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, p: 90, want: 9},
		{name: "hundred values p99 is the 99th", values: seq(100), p: 99, want: 99},
		{name: "101 values p99 is the 100th", values: seq(101), p: 99, want: 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStat(tc.values)
			got := map[int]*float64{50: s.P50, 90: s.P90, 95: s.P95, 99: s.P99}[tc.p]
			if got == nil || *got != tc.want {
				t.Errorf("p%d = %v, want %v", tc.p, got, tc.want)
			}
		})
	}
}

func seq(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i + 1)
	}
	return out
}

func TestEmptyStatHasOnlyCount(t *testing.T) {
	b, err := json.Marshal(NewStat(nil))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"count":0}` {
		t.Errorf("empty stat encodes as %s", b)
	}
}

func minimal() *Report {
	return &Report{
		SchemaVersion: SchemaVersion,
		Tool:          Tool{Name: "tollgate", Version: "test"},
		Scenario:      ScenarioInfo{Name: "s", File: "s.yaml", SHA256: strings.Repeat("a", 64), Vars: map[string]any{}},
		Host:          Host{OS: "linux", Arch: "amd64", CPUCores: 2, GoVersion: "go1.26"},
		StartedAt:     time.Unix(0, 0).UTC(),
		EndedAt:       time.Unix(1, 0).UTC(),
		Status:        StatusPass,
		Runs:          map[string]*Run{},
		RunOrder:      []string{},
		Gates:         []GateResult{},
	}
}

func TestMarshalValidates(t *testing.T) {
	if _, err := Marshal(minimal()); err != nil {
		t.Fatalf("a minimal report must validate: %v", err)
	}
	bad := minimal()
	bad.Status = "great"
	bad.Scenario.SHA256 = "xyz"
	_, err := Marshal(bad)
	if err == nil || !strings.Contains(err.Error(), "/status") || !strings.Contains(err.Error(), "/scenario/sha256") {
		t.Fatalf("want schema errors naming /status and /scenario/sha256, got %v", err)
	}
}

func TestWriteFileIsAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if string(got) != "new" {
		t.Errorf("content %q", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	if err := WriteFile(filepath.Join(dir, "missing", "r.json"), []byte("x")); err == nil {
		t.Error("writing into a missing directory must fail")
	}
}

func TestCheckWritable(t *testing.T) {
	dir := t.TempDir()
	if err := CheckWritable(filepath.Join(dir, "r.json")); err != nil {
		t.Errorf("writable path refused: %v", err)
	}
	if err := CheckWritable(filepath.Join(dir, "nope", "r.json")); err == nil {
		t.Error("a path in a missing directory must be refused before the run")
	}
	if err := CheckWritable(dir); err == nil {
		t.Error("a directory must be refused")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("CheckWritable left files: %v", entries)
	}
}

func TestDecode(t *testing.T) {
	good, err := json.Marshal(minimal())
	if err != nil {
		t.Fatal(err)
	}
	withExtra := strings.Replace(string(good), `"schema_version":1`, `"schema_version":1,"future_field":{"x":1}`, 1)
	v2 := strings.Replace(string(good), `"schema_version":1`, `"schema_version":2`, 1)
	for _, tc := range []struct {
		name, in string
		want     error // nil: decodes
	}{
		{name: "report", in: string(good)},
		{name: "an unknown field", in: withExtra, want: ErrInvalidReport},
		{name: "not JSON", in: "runs: {}", want: ErrNotReport},
		{name: "other JSON", in: `{"name": "x"}`, want: ErrNotReport},
		{name: "array", in: `[1, 2]`, want: ErrNotReport},
		{name: "another tool", in: `{"schema_version": 1, "tool": {"name": "other"}, "runs": {}}`, want: ErrNotReport},
		{name: "no runs", in: `{"schema_version": 1, "tool": {"name": "tollgate"}}`, want: ErrNotReport},
		{name: "wrong types", in: `{"schema_version": 1, "tool": {"name": "tollgate"}, "runs": {"a": 3}}`, want: ErrNotReport},
		{name: "another schema version", in: v2, want: ErrSchemaVersion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Decode(strings.NewReader(tc.in))
			if tc.want == nil {
				if err != nil || r == nil {
					t.Fatalf("Decode: %v", err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
		})
	}
}

func TestReadFileNamesThePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.json")
	if err := os.WriteFile(path, []byte(`{"name": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), path) || !errors.Is(err, ErrNotReport) {
		t.Fatalf("error %v, want one naming %s and wrapping ErrNotReport", err, path)
	}
	if _, err := ReadFile(path + ".missing"); err == nil || !strings.Contains(err.Error(), "reading report") {
		t.Fatalf("error %v, want a read error", err)
	}
}
