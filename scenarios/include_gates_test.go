package scenarios

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A shared base's gates reach every scenario that includes it: include
// adds gates, a gate of the same name takes the included one's place, and
// replace_gates: true brings back whole-list replacement.
func TestIncludeMergesGates(t *testing.T) {
	const base = `phases: {decode: {max_tokens: 4}}
gates:
  - {name: no errors, expr: "true"}
  - {name: decode floor, expr: "1 > 0"}
`
	tests := []struct {
		name    string
		team    string
		profile string
		want    []string // gate name=expr, in order
		wantErr string
	}{
		{name: "adds to the included gates",
			team: "include: base.yaml\ngates:\n  - {name: team gate, expr: \"2 > 1\"}\n",
			want: []string{"no errors=true", "decode floor=1 > 0", "team gate=2 > 1"}},
		{name: "same name replaces in place",
			team: "include: base.yaml\ngates:\n  - {name: decode floor, expr: \"3 > 1\"}\n  - {name: team gate, expr: \"2 > 1\"}\n",
			want: []string{"no errors=true", "decode floor=3 > 1", "team gate=2 > 1"}},
		{name: "no gates keeps the shared ones",
			team: "include: base.yaml\nname: team\n",
			want: []string{"no errors=true", "decode floor=1 > 0"}},
		{name: "replace_gates replaces the list",
			team: "include: base.yaml\nreplace_gates: true\ngates:\n  - {name: only, expr: \"2 > 1\"}\n",
			want: []string{"only=2 > 1"}},
		{name: "replace_gates false adds",
			team: "include: base.yaml\nreplace_gates: false\ngates:\n  - {name: only, expr: \"2 > 1\"}\n",
			want: []string{"no errors=true", "decode floor=1 > 0", "only=2 > 1"}},
		{name: "a profile adds gates too",
			team:    "include: base.yaml\nprofiles:\n  ci:\n    gates: [{name: ci gate, expr: \"4 > 1\"}]\n",
			profile: "ci",
			want:    []string{"no errors=true", "decode floor=1 > 0", "ci gate=4 > 1"}},
		{name: "a profile may replace them",
			team:    "include: base.yaml\nprofiles:\n  ci:\n    replace_gates: true\n    gates: [{name: ci gate, expr: \"4 > 1\"}]\n",
			profile: "ci",
			want:    []string{"ci gate=4 > 1"}},
		{name: "a name twice in the team is still a duplicate",
			team:    "include: base.yaml\ngates:\n  - {name: decode floor, expr: \"3 > 1\"}\n  - {name: decode floor, expr: \"5 > 1\"}\n",
			wantErr: `team.yaml:4:12: gates[2]: duplicate gate name "decode floor"`},
		{name: "replace_gates without include",
			team:    "replace_gates: true\nphases: {decode: {}}\n",
			wantErr: "team.yaml:1:16: replace_gates: this file includes nothing whose gates it could replace"},
		{name: "replace_gates must be a boolean",
			team:    "include: base.yaml\nreplace_gates: yes\n",
			wantErr: `team.yaml:2:16: replace_gates: expected true or false, got string "yes"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range map[string]string{"base.yaml": base, "team.yaml": tc.team} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			sc, err := Load(filepath.Join(dir, "team.yaml"), Options{Profile: tc.profile, LookupEnv: noEnv})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, g := range sc.Gates {
				got = append(got, g.Name+"="+g.Expr)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("gates %q, want %q", got, tc.want)
			}
		})
	}
}

// Errors in a gate that came from the included file point into that file.
func TestIncludedGateErrorsPointIntoTheBase(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"base.yaml": "phases: {decode: {}}\ngates:\n  - {name: g, exp: x}\n",
		"team.yaml": "include: base.yaml\ngates:\n  - {name: t, expr: \"true\"}\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Load(filepath.Join(dir, "team.yaml"), Options{LookupEnv: noEnv})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "base.yaml")+`:3:15: gates[0]: unknown field "exp"`) {
		t.Fatalf("error %v", err)
	}
}
