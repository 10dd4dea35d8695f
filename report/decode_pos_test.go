package report

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A report that is not JSON is named with the line and column of the fault.
func TestReadFileNamesLineAndColumn(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{name: "syntax error", text: "{\n  \"schema_version\": 1,\n  \"tool\": {\"name\": \"tollgate\"},,\n}", want: ":3:32: not a tollgate report: invalid character ','"},
		{name: "truncated", text: "{\n  \"schema_version\": 1,\n", want: ":2:23: not a tollgate report: unexpected end of JSON input"},
		{name: "wrong type", text: "{\"schema_version\": \"one\"}", want: ":1:24: not a tollgate report: json: cannot unmarshal string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "r.json")
			if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadFile(path)
			if err == nil || !strings.Contains(err.Error(), path+tc.want) {
				t.Fatalf("error %v, want %s%s", err, path, tc.want)
			}
			if !errors.Is(err, ErrNotReport) {
				t.Error("not an ErrNotReport")
			}
			var syn *json.SyntaxError
			var typ *json.UnmarshalTypeError
			if !errors.As(err, &syn) && !errors.As(err, &typ) {
				t.Error("the JSON error is not in the chain")
			}
		})
	}
}
