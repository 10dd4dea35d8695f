package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/internal/safefile"
)

// ErrNotReport marks input that is not a tollgate report.
var ErrNotReport = errors.New("not a tollgate report")

// ErrSchemaVersion marks a tollgate report of a format this tollgate does
// not read.
var ErrSchemaVersion = errors.New("unsupported schema_version")

// MaxReportBytes bounds a report read back (merge, judge, compare, report,
// --baseline). Decoding holds the bytes, a generic copy and the typed
// report at once, several times the file in memory; 512 MiB is a run of
// about a million requests with samples, and more is better written
// without samples (report: {samples: false}) or as shards.
const MaxReportBytes = safefile.MaxReportBytes

// ErrReportTooLarge marks a report over MaxReportBytes.
var ErrReportTooLarge = safefile.ErrTooLarge

func tooLarge() error {
	return fmt.Errorf("%w: over %d MiB, the most tollgate reads (write it with report: {samples: false}, or as shards)", ErrReportTooLarge, MaxReportBytes>>20)
}

// ErrNotRegular marks a report path that is not a regular file (a
// device, a pipe, a directory): it may never end, or never answer.
var ErrNotRegular = safefile.ErrNotRegular

// Decode reads a saved report and checks it before any reader trusts it.
// Unknown fields are refused, each at its JSON pointer (see Check): a
// report of this schema_version has exactly its fields. What it must have
// is the identity of
// a tollgate report (schema_version, tool.name "tollgate", runs); anything
// else wraps ErrNotReport, and a schema_version other than SchemaVersion
// wraps ErrSchemaVersion. Then it must pass Check (the report schema, its
// unknown fields aside, and its own invariants), else the error is a
// *CheckError naming each JSON path. Samples decode as []any;
// PhaseSamples types them.
//
// At most MaxReportBytes are read; a longer input wraps ErrReportTooLarge.
func Decode(r io.Reader) (*Report, error) {
	data, err := readAtMost(r, MaxReportBytes)
	if err != nil {
		return nil, err
	}
	var probe struct {
		SchemaVersion *int `json:"schema_version"`
		Tool          struct {
			Name string `json:"name"`
		} `json:"tool"`
		Runs json.RawMessage `json:"runs"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotReport, at(data, err))
	}
	switch {
	case probe.SchemaVersion == nil:
		return nil, fmt.Errorf("%w: no schema_version", ErrNotReport)
	case probe.Tool.Name != "tollgate":
		return nil, fmt.Errorf("%w: tool.name is %s", ErrNotReport, safefile.Excerpt(probe.Tool.Name))
	case len(probe.Runs) == 0 || bytes.Equal(probe.Runs, []byte("null")):
		return nil, fmt.Errorf("%w: no runs", ErrNotReport)
	case *probe.SchemaVersion != SchemaVersion:
		return nil, fmt.Errorf("%w: schema_version %d; this tollgate reads version %d", ErrSchemaVersion, *probe.SchemaVersion, SchemaVersion)
	}
	var rep Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotReport, at(data, err))
	}
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotReport, at(data, err))
	}
	if v := Check(doc); len(v) > 0 {
		return nil, &CheckError{Violations: v}
	}
	return &rep, nil
}

// ReadFile reads and decodes the report at path (see Decode); its errors
// name the file.
//
// The file must be a regular file of at most MaxReportBytes, checked by
// internal/safefile (the one way tollgate opens a file it is named): a
// FIFO or a device named by mistake fails at once instead of blocking or
// streaming forever.
func ReadFile(path string) (*Report, error) {
	data, err := ReadBytes(path)
	if err != nil {
		return nil, err
	}
	return DecodeFile(path, data)
}

// ReadBytes reads the file at path as ReadFile does, under its rules (a
// regular file of at most MaxReportBytes), for a reader that looks at the
// bytes before it decodes them (report/foreign: another tool's result).
func ReadBytes(path string) ([]byte, error) {
	f, err := safefile.Open(path, safefile.Rules{Limit: MaxReportBytes, What: "report"})
	if errors.Is(err, safefile.ErrNotRegular) || errors.Is(err, safefile.ErrTooLarge) {
		return nil, fmt.Errorf("%w: %w", ErrNotReport, err)
	}
	if err != nil {
		return nil, fmt.Errorf("reading report: %w", err)
	}
	defer f.Close()
	data, err := readAtMost(f, MaxReportBytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return data, nil
}

// DecodeFile decodes data, read from path, as Decode does; its errors
// name the file, and a JSON error its line and column.
func DecodeFile(path string, data []byte) (*Report, error) {
	rep, err := Decode(bytes.NewReader(data))
	var pe *PositionError
	switch {
	case errors.As(err, &pe):
		// As a compiler would: file:line:col: what is wrong.
		return nil, fmt.Errorf("%s:%d:%d: %w: %w", path, pe.Line, pe.Col, ErrNotReport, pe.Err)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rep, nil
}

// readAtMost reads r whole, or refuses it past max bytes.
func readAtMost(r io.Reader, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("reading report: %w", err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%w: %w", ErrNotReport, tooLarge())
	}
	return data, nil
}

// PositionError is a JSON error at a place in the input: a syntax error,
// or a value of the wrong type. Line and Col are 1-based (Col in runes).
type PositionError struct {
	Line, Col int
	Err       error
}

func (e *PositionError) Error() string {
	return fmt.Sprintf("line %d, column %d: %v", e.Line, e.Col, e.Err)
}

func (e *PositionError) Unwrap() error { return e.Err }

// at places a JSON decoding error in data, when it says where.
func at(data []byte, err error) error {
	var offset int64
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		offset = syn.Offset
	case errors.As(err, &typ):
		offset = typ.Offset
	default:
		return err
	}
	// The offset is just past the byte that was wrong.
	if offset > 0 {
		offset--
	}
	offset = min(offset, int64(len(data)))
	before := data[:offset]
	line := bytes.Count(before, []byte("\n")) + 1
	col := utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]) + 1
	return &PositionError{Line: line, Col: col, Err: err}
}
