// Package schema embeds tollgate's published JSON Schemas (the scenario file
// and the report) and validates documents against them.
package schema

import (
	"bytes"
	_ "embed"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

//go:embed scenario.schema.json
var scenarioJSON []byte

//go:embed report.schema.json
var reportJSON []byte

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

func compile(url string, doc []byte) (*jsonschema.Schema, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", url, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(url, v); err != nil {
		return nil, fmt.Errorf("schema %s: %w", url, err)
	}
	return c.Compile(url)
}

// Each schema is compiled once, on first use: compiling took half of the
// time of loading a 1,000-run matrix (it ran once per run). A compiled
// schema is never changed after compilation and Validate is safe for
// concurrent use, so these are constants that are built lazily, not state.
var (
	scenarioSchema = sync.OnceValues(func() (*jsonschema.Schema, error) { return compile(ScenarioURL, scenarioJSON) })
	reportSchema   = sync.OnceValues(func() (*jsonschema.Schema, error) { return compile(ReportURL, reportJSON) })
)

// CompiledScenario is the scenario schema as the validator compiled it,
// for callers that walk it (scenarios resolves --set paths through it).
// It is shared and compiled once: callers read it and never change it.
func CompiledScenario() (*jsonschema.Schema, error) { return scenarioSchema() }

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
			pr := Problem{Path: e.InstanceLocation, Message: e.ErrorKind.LocalizedString(p), Keyword: kw}
			if ap, ok := e.ErrorKind.(*kind.AdditionalProperties); ok {
				pr.Properties = ap.Properties
			}
			out = append(out, pr)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.SliceStable(out, func(i, j int) bool { return strings.Join(out[i].Path, "/") < strings.Join(out[j].Path, "/") })
	return out, nil
}

// ValidateScenario validates a decoded scenario document (JSON shapes).
// A schema that fails to compile is a build defect; it is reported as a problem.
func ValidateScenario(v any) []Problem {
	out, err := validate(scenarioSchema, v)
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
