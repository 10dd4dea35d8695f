package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tollgate-dev/tollgate/schema"
)

// Marshal encodes a report as indented JSON after validating it against the
// published report schema: a report that would not validate is never written.
func Marshal(r *Report) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("report: encoding: %w", err)
	}
	var v any
	if err := json.Unmarshal(buf.Bytes(), &v); err != nil {
		return nil, fmt.Errorf("report: re-decoding: %w", err)
	}
	if err := schema.ValidateReport(v); err != nil {
		return nil, &InvalidError{Data: buf.Bytes(), Err: err}
	}
	return buf.Bytes(), nil
}

// InvalidError is a report that failed its schema. Data is the encoded
// report all the same, so a caller can keep what was measured for a person
// to inspect; it is never to be written where a report is expected.
type InvalidError struct {
	Data []byte
	Err  error
}

func (e *InvalidError) Error() string { return "report: " + e.Err.Error() }
func (e *InvalidError) Unwrap() error { return e.Err }

// WriteFile writes data to path atomically: a temporary file in the same
// directory, synced, then renamed over path. A crash leaves the old file or
// the new one, never half of one.
func WriteFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	ok = true
	return nil
}

// CheckWritable fails now, before a long run, if path cannot be written later.
func CheckWritable(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".check-*")
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	name := f.Name()
	_ = f.Close()
	return os.Remove(name)
}
