package scenarios

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/tollgate-dev/tollgate/schema"
)

// The published schema and the loader are one truth: every scenario the
// loader runs is free of schema errors in an editor, and every file the
// schema refuses the loader refuses too. These tests hold them to it over
// every example, every test scenario of this repository and a set of
// odd-but-valid and odd-but-invalid files, with the schema applied the way
// editors apply it: to the file as written, read as YAML 1.2.

// editorValue reads a YAML file as an editor does: YAML 1.2 core schema
// (no digit separators, no 0b, no YAML 1.1 octals or timestamps),
// aliases expanded, keys as strings. It is written apart from the
// loader's own resolution on purpose, so that the two check each other.
func editorValue(data []byte) (any, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 {
		return nil, errors.New("empty document")
	}
	if k := duplicateKey(doc.Content[0]); k != nil {
		// Editors report a key given twice as a YAML error.
		return nil, fmt.Errorf("line %d: map keys must be unique (%q)", k.Line, k.Value)
	}
	return editorNode(doc.Content[0]), nil
}

func duplicateKey(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.MappingNode {
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; seen[k.Value] {
				return k
			}
			seen[n.Content[i].Value] = true
		}
	}
	for _, c := range n.Content {
		if k := duplicateKey(c); k != nil {
			return k
		}
	}
	return nil
}

var (
	edInt   = regexp.MustCompile(`^[-+]?[0-9]+$`)
	edOct   = regexp.MustCompile(`^0o([0-7]+)$`)
	edHex   = regexp.MustCompile(`^0x([0-9a-fA-F]+)$`)
	edFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)
)

func editorNode(n *yaml.Node) any {
	switch n.Kind {
	case yaml.AliasNode:
		return editorNode(n.Alias)
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			m[n.Content[i].Value] = editorNode(n.Content[i+1])
		}
		return m
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			l = append(l, editorNode(c))
		}
		return l
	}
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return n.Value
	}
	if n.Style&yaml.TaggedStyle != 0 && n.Tag == "!!str" {
		return n.Value
	}
	v := n.Value
	switch v {
	case "", "~", "null", "Null", "NULL":
		return nil
	case "true", "True", "TRUE":
		return true
	case "false", "False", "FALSE":
		return false
	case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF":
		return math.Inf(1)
	case "-.inf", "-.Inf", "-.INF":
		return math.Inf(-1)
	case ".nan", ".NaN", ".NAN":
		return math.NaN()
	}
	if edInt.MatchString(v) {
		if i, err := strconv.ParseInt(v, 10, 64); err == nil {
			return json.Number(strconv.FormatInt(i, 10))
		}
		return json.Number(strings.TrimPrefix(v, "+"))
	}
	for _, re := range []struct {
		re   *regexp.Regexp
		base int
	}{{edOct, 8}, {edHex, 16}} {
		if m := re.re.FindStringSubmatch(v); m != nil {
			if i, err := strconv.ParseInt(m[1], re.base, 64); err == nil {
				return json.Number(strconv.FormatInt(i, 10))
			}
		}
	}
	if edFloat.MatchString(v) {
		f, _ := strconv.ParseFloat(v, 64)
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
	}
	return v
}

// agreeFiles is the corpus: examples, every test scenario, and the files
// written for this test.
func agreeFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, pat := range []string{
		"../examples/*.yaml", "../examples/*/*.yaml",
		"testdata/good/*.yaml", "testdata/bad/*.yaml", "testdata/include/*.yaml",
		"testdata/agree/valid/*.yaml", "testdata/agree/invalid/*.yaml",
		"../cmd/tollgate/testdata/*.yaml", "../cmd/tollgate/testdata/*/*.yaml",
	} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	sort.Strings(out)
	if len(out) < 50 {
		t.Fatalf("found only %d scenario files", len(out))
	}
	return out
}

// schemaVerdict validates a file, as written, against the published
// schema, and the files it includes, each as an editor would show it: the
// problems, or none.
func schemaVerdict(t *testing.T, path string, seen map[string]bool) []string {
	t.Helper()
	if seen[filepath.Clean(path)] {
		return nil
	}
	seen[filepath.Clean(path)] = true
	data, err := os.ReadFile(path)
	if err != nil {
		return nil // an editor shows no schema problem in a file it cannot open
	}
	v, err := editorValue(data)
	if err != nil {
		return []string{path + ": " + err.Error()}
	}
	var out []string
	for _, p := range schema.ValidateScenario(v) {
		out = append(out, path+": "+p.String())
	}
	m, _ := v.(map[string]any)
	var incs []any
	switch x := m["include"].(type) {
	case string:
		incs = []any{x}
	case []any:
		incs = x
	}
	for _, inc := range incs {
		if s, ok := inc.(string); ok {
			out = append(out, schemaVerdict(t, filepath.Join(filepath.Dir(path), s), seen)...)
		}
	}
	return out
}

// beyondSchema are the files the loader refuses for a rule that JSON
// Schema cannot state: files on disk, the environment, other files of an
// include chain, references between values, arithmetic between fields,
// the target a phase runs on. Each names the loader's message; the schema
// must accept the file, so a rule the schema learns leaves this list.
var beyondSchema = map[string]string{
	"testdata/bad/bad-interp-namespace.yaml":         `unknown namespace "var"`,      // what a ${...} refers to
	"testdata/bad/undefined-var.yaml":                "undefined variable vars.mdoe", // what a ${...} refers to
	"testdata/bad/forward-var.yaml":                  "vars.b is defined later",      // order of vars
	"testdata/bad/unknown-matrix-key.yaml":           `unknown matrix key "cach"`,    // what a ${...} refers to
	"testdata/bad/missing-env.yaml":                  "environment variable TOLLGATE_TEST_UNSET is not set",
	"testdata/bad/ca-file-missing.yaml":              "no such file or directory",             // a file on disk
	"testdata/bad/ca-file-not-pem.yaml":              "holds no PEM certificate",              // a file's content
	"testdata/bad/include-cycle.yaml":                "include cycle",                         // other files
	"testdata/bad/include-missing.yaml":              "cannot read",                           // other files
	"testdata/include/missing.yaml":                  "cannot read",                           // other files
	"testdata/include/cycle-a.yaml":                  "include cycle",                         // other files
	"testdata/include/cycle-b.yaml":                  "include cycle",                         // other files
	"testdata/bad/matrix-too-many-runs.yaml":         "expands to 4096 runs",                  // a product of list lengths
	"testdata/bad/load-bad-dist.yaml":                "uniform needs 1 <= min <= max",         // two fields compared
	"testdata/bad/retries-backoff.yaml":              "is below backoff",                      // two fields compared
	"testdata/bad/decode-no-tokens.yaml":             "a decode phase needs output_tokens",    // a phase and its target
	"testdata/bad/prefill-without-sizes.yaml":        "a prefill phase needs prompt_tokens",   // on a live target only
	"testdata/bad/load-on-seam.yaml":                 "cannot run on a seam target",           // a phase and its target
	"testdata/bad/live-seam-session-in-headers.yaml": "the session header carries session_id", // a header name against session_header
	"testdata/bad/agent-tool-schema-invalid.yaml":    "not a valid JSON Schema",               // a value against a meta-schema
	"testdata/bad/sessions-context-too-long.yaml":    "tokens of context",                     // a sum of fields against the target's window
	"testdata/bad/context-over-window.yaml":          "tokens of context",                     // a sum of fields against the target's window
	"testdata/bad/prefix-cache-suffix-too-long.yaml": "longer than the prompt it follows",     // two fields compared
}

func TestLoaderAndSchemaAgree(t *testing.T) {
	files := agreeFiles(t)
	for f := range beyondSchema {
		if !slices.Contains(files, f) {
			t.Errorf("beyondSchema lists %s, which is not in the corpus", f)
		}
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			_, lerr := Load(f, Options{LookupEnv: noEnv})
			sch := schemaVerdict(t, f, map[string]bool{})
			var list ErrorList
			if lerr != nil && !errors.As(lerr, &list) {
				t.Fatalf("loader error is %T: %v", lerr, lerr)
			}
			dir := filepath.Base(filepath.Dir(f))
			if first, _, _ := strings.Cut(string(data), "\n"); dir == "invalid" {
				want, ok := strings.CutPrefix(first, "# want: ")
				if !ok {
					t.Fatal("an invalid file starts with '# want: LINE:COL: MESSAGE'")
				}
				if lerr == nil || !strings.Contains(lerr.Error(), f+":"+want) {
					t.Errorf("loader error %v, want %s:%s", lerr, f, want)
				}
			}
			if dir == "valid" && lerr != nil {
				t.Errorf("the loader refuses a valid file: %v", lerr)
			}
			if why, ok := beyondSchema[f]; ok {
				if lerr == nil || !strings.Contains(lerr.Error(), why) {
					t.Errorf("listed as refused by the loader for %q, but the loader says %v", why, lerr)
				}
				if len(sch) > 0 {
					t.Errorf("listed as beyond the schema, but the schema refuses it too (take it off beyondSchema):\n  %s", strings.Join(sch, "\n  "))
				}
				return
			}
			switch {
			case lerr == nil && len(sch) > 0:
				t.Errorf("DISAGREE: the loader accepts, the schema refuses:\n  %s", strings.Join(sch, "\n  "))
			case lerr != nil && len(sch) == 0:
				t.Errorf("DISAGREE: the loader refuses, the schema accepts:\n  %v", lerr)
			}
		})
	}
}
