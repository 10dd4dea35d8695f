package scenarios

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tollgate-dev/tollgate/internal/safefile"
)

// Caps on the files a scenario names; docs/scenarios.md states them.
const (
	// MaxFileBytes bounds a scenario file and each included file: a
	// scenario is a page of YAML, and loading cost grows with it.
	MaxFileBytes = safefile.MaxScenarioBytes
	// MaxDataBytes bounds a dataset or a prompt file, MaxTraceBytes a
	// trace; they are streamed, so this bounds time, not memory.
	MaxDataBytes  = safefile.MaxDataBytes
	MaxTraceBytes = safefile.MaxTraceBytes
)

// ErrTooLarge is returned for a file over its cap.
var ErrTooLarge = safefile.ErrTooLarge

// ErrNotRegular is returned for a named file that is a FIFO, a device, a
// directory or a socket.
var ErrNotRegular = safefile.ErrNotRegular

// ErrOutside is returned for a named file that resolves outside the
// scenario's directory tree and every --allow-outside directory.
var ErrOutside = safefile.ErrOutside

// fileRoots are the directories a scenario's files may resolve into: the
// top-level scenario file's tree and each allowed directory.
func fileRoots(file string, allow []string) []string {
	roots := []string{treeOf(safefile.Root(filepath.Dir(file)))}
	for _, a := range allow {
		roots = append(roots, safefile.Root(a))
	}
	return roots
}

// treeOf is the tree a scenario in dir may read: the repository holding
// it (the nearest directory above with a .git), else dir itself. Files of
// the scenario's own repository are in the pull request that brought the
// scenario anyway, and a perf/ scenario including ../shared/base.yaml is
// the common layout; the runner's other files (/etc, $HOME, the CI
// workspace next to the checkout) stay outside.
func treeOf(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return dir
		}
		d = up
	}
}

// openNamed opens a file the scenario names (an include, a dataset, a
// trace, a prompt file) at path (already joined to the directory it is
// relative to), named at at.
// It is the one place such a file is opened: a regular file, at most
// limit bytes, inside the scenario's tree unless --allow-outside covers
// it. A path that came from a --set flag was typed by the user, like a
// --baseline path, and may lie anywhere.
func (d *decoder) openNamed(at Pos, path, what string, limit int64) (*safefile.File, error) {
	r := safefile.Rules{Limit: limit, What: what}
	if at.Set == "" {
		r.Roots = d.roots
	}
	f, err := safefile.Open(path, r)
	if oe := (*safefile.OutsideError)(nil); errors.As(err, &oe) {
		return nil, fmt.Errorf("%w; to read it, pass --allow-outside %s", err, filepath.Dir(oe.Resolved))
	}
	return f, err
}
