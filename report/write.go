package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

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
// the new one, never half of one; a process killed while writing (kill -9)
// leaves its temporary file, which the next write to the directory removes
// (removeStale).
func WriteFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	removeStale(dir)
	f, err := createTemp(dir, filepath.Base(path), tempWrite)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	// Renamed while still open, so still locked: a cleaner never sees it
	// unlocked under its temporary name.
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	ok = true
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// CheckWritable fails now, before a long run, if path cannot be written later.
func CheckWritable(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	f, err := createTemp(filepath.Dir(path), filepath.Base(path), tempCheck)
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	name := f.Name()
	_ = os.Remove(name)
	return f.Close()
}

// Temporary files are named .BASE.tollgate-KIND-RANDOM, beside the file
// they become, and locked (flock) by the process writing them for as long
// as they are open. A lock ends with its process, however it ends, so a
// temporary file that can be locked is one whose writer is gone: stale.
// The lock, not a process id in the name, tells, so a writer on another
// machine or in another PID namespace sharing the directory (a shard on a
// shared volume) is never taken for a dead one. Where flock is not to be
// had, no file is ever taken for stale.
const (
	tempWrite = "tmp"   // a file being written (WriteFile)
	tempCheck = "check" // a probe of the directory (CheckWritable)
)

// tempMarks are the infixes of tollgate's temporary file names.
var tempMarks = []string{".tollgate-" + tempWrite + "-", ".tollgate-" + tempCheck + "-"}

// createTemp creates and locks a temporary file for base in dir. Another
// write's removeStale may remove the file between its creation and the
// lock (it was not locked yet): then the file is made again.
func createTemp(dir, base, kind string) (*os.File, error) {
	for range 8 {
		f, err := os.CreateTemp(dir, "."+base+".tollgate-"+kind+"-*")
		if err != nil {
			return nil, err
		}
		if err := lockFile(f); err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
			return nil, err
		}
		if sameFile(f, f.Name()) {
			return f, nil
		}
		_ = f.Close()
	}
	return nil, fmt.Errorf("a temporary file in %s was removed as soon as it was made, 8 times", dir)
}

// removeStale removes the temporary files in dir whose writer is gone
// (killed while writing: kill -9, a power cut). It is best effort: what it
// cannot read or lock it leaves.
func removeStale(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasPrefix(name, ".") || !isTemp(name) {
			continue
		}
		path := filepath.Join(dir, name)
		f, err := openNoFollow(path)
		if err != nil {
			continue
		}
		// Locked now, it is no one else's; still under its name, it is the
		// file that was listed (a writer that renamed it is done with it).
		if tryLock(f) && sameFile(f, path) {
			_ = os.Remove(path)
		}
		_ = f.Close()
	}
}

func isTemp(name string) bool {
	for _, m := range tempMarks {
		if strings.Contains(name, m) {
			return true
		}
	}
	return false
}

// sameFile reports whether path names the file f has open.
func sameFile(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Lstat(path)
	return err == nil && os.SameFile(a, b)
}
