// Package schema embeds tollgate's published JSON Schemas (the scenario file
// and the report) and validates documents against them.
package schema

import (
	"bytes"
	_ "embed"
	"fmt"
	"path"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

//go:embed scenario.schema.json
var scenarioJSON []byte

//go:embed report.schema.json
var reportJSON []byte

// The lean schemas are the published ones without their annotations
// (description, examples, …) and white space: what the validator
// compiles, a fifth of the bytes (TestLeanSchemasAreDerived derives them;
// TestEmbeddedCompileAgrees checks they validate as the published ones).
//
//go:generate go test . -run TestLeanSchemasAreDerived -update

//go:embed scenario.lean.json
var scenarioLean []byte

//go:embed report.lean.json
var reportLean []byte

// scenarioPlain is the lean scenario schema for a document with neither
// include nor profiles (most scenario files): the part_* definitions,
// which only those two reach, are left out, and it compiles in half the
// time. It validates such a document as the whole schema does
// (plainScenario in lean_test.go derives it and says why;
// TestEmbeddedCompileAgrees checks it).
//
//go:embed scenario.plain.json
var scenarioPlain []byte

// Published URLs; editors resolve them through the yaml-language-server comment.
const (
	ScenarioURL = "https://tollgate.dev/schema/scenario.schema.json"
	ReportURL   = "https://tollgate.dev/schema/report.schema.json"
)

// Scenario returns the scenario file schema as JSON.
func Scenario() []byte { return bytes.Clone(scenarioJSON) }

// Report returns the report schema as JSON.
func Report() []byte { return bytes.Clone(reportJSON) }

// Problem is one schema violation: where in the instance, and what.
type Problem struct {
	Path    []string
	Message string
	// Keyword is the schema keyword that failed (type, required,
	// additionalProperties, …).
	Keyword string
	// Properties are, for additionalProperties, the keys the schema does
	// not allow, so a reader can name each by its own path.
	Properties []string
}

func (p Problem) String() string { return "/" + strings.Join(p.Path, "/") + ": " + p.Message }

// embeddedBase is the prefix of the URL each embedded schema is compiled
// under. The validator checks every document it compiles against its
// draft's meta-schema, except those whose URL begins with
// https://json-schema.org/ (its own meta-schemas); for the scenario schema
// that check was half of the compile and half of the CPU time of tollgate
// validate. The embedded schemas are constants of the build, so the check
// is made by go test ./schema (TestSchemasMatchMetaSchema compiles them
// under their published URLs, meta-schema check included) rather than at
// every start. The documents carry their published URL as $id, so their
// $refs resolve as before, and the validator's messages name no URL;
// TestEmbeddedCompileAgrees checks that both compiles give the same
// problems.
const embeddedBase = "https://json-schema.org/tollgate-embedded/"

// compile compiles the schema doc published at url. embedded compiles it
// as a constant of the build, under embeddedURL (no meta-schema check);
// otherwise it is compiled as any other schema, under url.
func compile(url string, doc []byte, embedded bool) (*jsonschema.Schema, error) {
	defer pauseGC()()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", url, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	root := url
	if embedded {
		root = embeddedURL(url)
	}
	if err := c.AddResource(root, v); err != nil {
		return nil, fmt.Errorf("schema %s: %w", url, err)
	}
	return c.Compile(root)
}

// gcPause serializes pauseGC, so that two compiles at once restore the
// collector's setting in the order they changed it.
var gcPause sync.Mutex

// pauseGC turns the garbage collector off until the function it returns is
// called, and that function turns it back to its setting. Compiling the
// scenario schema allocates some 6.5 MB in about 10 ms, in a process whose
// first collection goal is 4 MB: tollgate validate collected 9 times while
// the compile built its heap (4 to 9 ms of its 40 ms of CPU), and now once,
// after it, when 2 MB of it is still live. The heap grows by what one
// compile allocates.
func pauseGC() (resume func()) {
	gcPause.Lock()
	old := debug.SetGCPercent(-1)
	return func() {
		debug.SetGCPercent(old)
		gcPause.Unlock()
	}
}

// embeddedURL is the root URL an embedded schema published at url is
// compiled under: see embeddedBase.
func embeddedURL(url string) string { return embeddedBase + path.Base(url) }

// Each schema is compiled once, on first use: compiling took half of the
// time of loading a 1,000-run matrix (it ran once per run), and a command
// that reads no report never compiles the report schema. A compiled
// schema is never changed after compilation and Validate is safe for
// concurrent use, so these are constants that are built lazily, not state.
var (
	scenarioSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
		defer scenarioCompiled.Store(true)
		return compile(ScenarioURL, scenarioLean, true)
	})
	plainSchema  = sync.OnceValues(func() (*jsonschema.Schema, error) { return compile(ScenarioURL, scenarioPlain, true) })
	reportSchema = sync.OnceValues(func() (*jsonschema.Schema, error) { return compile(ReportURL, reportLean, true) })
)

// scenarioCompiled says scenarioSchema has been compiled (for --set), so
// that ValidateScenario need not compile plainSchema as well.
var scenarioCompiled atomic.Bool

// CompiledScenario is the scenario schema as the validator compiled it,
// for callers that walk it (scenarios resolves --set paths through it).
// It is shared and compiled once: callers read it and never change it.
func CompiledScenario() (*jsonschema.Schema, error) { return scenarioSchema() }

// scenarioFor is the compiled schema to validate v against: the plain one
// for a document with neither include nor profiles (unless the whole one
// is compiled already), else the whole. Both give the same problems for
// such a document.
func scenarioFor(v any) func() (*jsonschema.Schema, error) {
	if plainFor(v) && !scenarioCompiled.Load() {
		return plainSchema
	}
	return scenarioSchema
}

// plainFor says v is a document scenario.plain.json is for: a mapping
// with neither include nor profiles.
func plainFor(v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	_, include := m["include"]
	_, profiles := m["profiles"]
	return !include && !profiles
}

func validate(compiled func() (*jsonschema.Schema, error), v any) ([]Problem, error) {
	sch, err := compiled()
	if err != nil {
		return nil, err
	}
	err = sch.Validate(v)
	if err == nil {
		return nil, nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return nil, err
	}
	p := message.NewPrinter(language.English)
	var out []Problem
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			kw := ""
			if k := e.ErrorKind.KeywordPath(); len(k) > 0 {
				kw = k[len(k)-1]
			}
			// The validator lists unknown keys in map order: sorted, the
			// message and the list read the same on every run.
			var props []string
			if ap, ok := e.ErrorKind.(*kind.AdditionalProperties); ok {
				ap.Properties = slices.Sorted(slices.Values(ap.Properties))
				props = ap.Properties
			}
			pr := Problem{Path: e.InstanceLocation, Message: e.ErrorKind.LocalizedString(p), Keyword: kw, Properties: props}
			out = append(out, pr)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	// Problems at one location also come in the walk's map order: the
	// keyword and message break the tie.
	sort.SliceStable(out, func(i, j int) bool {
		a, b := strings.Join(out[i].Path, "/"), strings.Join(out[j].Path, "/")
		if a != b {
			return a < b
		}
		if out[i].Keyword != out[j].Keyword {
			return out[i].Keyword < out[j].Keyword
		}
		return out[i].Message < out[j].Message
	})
	return out, nil
}

// ValidateScenario validates a decoded scenario document (JSON shapes).
// A schema that fails to compile is a build defect; it is reported as a problem.
func ValidateScenario(v any) []Problem {
	out, err := validate(scenarioFor(v), v)
	if err != nil {
		return []Problem{{Message: "internal: " + err.Error()}}
	}
	return out
}

// ReportProblems validates a report (as decoded JSON: map[string]any etc)
// and returns every violation, in path order. A schema that fails to
// compile is a build defect; it is the error.
func ReportProblems(v any) ([]Problem, error) { return validate(reportSchema, v) }

// ValidateReport validates a report (as decoded JSON: map[string]any etc).
func ValidateReport(v any) error {
	out, err := validate(reportSchema, v)
	if err != nil {
		return err
	}
	if len(out) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("report does not match its schema:")
	for i, p := range out {
		if i == 10 {
			fmt.Fprintf(&b, "\n  … and %d more", len(out)-10)
			break
		}
		b.WriteString("\n  " + p.String())
	}
	return fmt.Errorf("%s", b.String())
}
