//go:build unix

package report

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// holdTemp, in a child process (TestMain runs it when TOLLGATE_HOLD_TEMP
// names a file), opens a temporary file as WriteFile does, says its name
// on stdout and waits, holding it, until it is killed.
func holdTemp(path string) {
	f, err := createTemp(filepath.Dir(path), filepath.Base(path), tempWrite)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println(f.Name())
	select {}
}

func TestMain(m *testing.M) {
	if p := os.Getenv("TOLLGATE_HOLD_TEMP"); p != "" {
		holdTemp(p)
	}
	os.Exit(m.Run())
}

// startHolder starts a process writing path's temporary file and returns
// it with the file's name, once the process says it holds it.
func startHolder(t *testing.T, path string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TOLLGATE_HOLD_TEMP="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "/") {
		t.Fatalf("the holder said %q (%v)", line, err)
	}
	return cmd, strings.TrimSpace(line)
}

// A writer killed with SIGKILL while writing leaves its temporary file;
// the next write to the directory removes it, and leaves the temporary
// file of a writer that is still writing, and every file that is not a
// tollgate temporary file.
func TestStaleTempFilesAreRemoved(t *testing.T) {
	dir := t.TempDir()
	killed, stale := startHolder(t, filepath.Join(dir, "r.json"))
	_, live := startHolder(t, filepath.Join(dir, "other.json"))
	if err := killed.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = killed.Wait()
	keep := []string{".hidden", ".r.json.tmp-123456", "notes.tollgate-tmp-1"}
	for _, name := range keep {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A link named like a temporary file is not followed, and its target stays.
	target := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(target, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := ".link.json.tollgate-tmp-9"
	if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
		t.Fatal(err)
	}
	keep = append(keep, link)

	if err := WriteFile(filepath.Join(dir, "r.json"), []byte("new")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(stale); !os.IsNotExist(err) {
		t.Errorf("the killed writer's %s is still there (%v)", filepath.Base(stale), err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the live writer's %s was removed: %v", filepath.Base(live), err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	for _, name := range append(keep, "r.json", filepath.Base(live)) {
		if !slices.Contains(names, name) {
			t.Errorf("%s was removed; the directory holds %v", name, names)
		}
	}
	if len(names) != len(keep)+2 {
		t.Errorf("the directory holds %v", names)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "x" {
		t.Errorf("the link's target: %q, %v", b, err)
	}
}

// CheckWritable's probe is a temporary file of the same kind: one left by
// a killed process goes too.
func TestStaleCheckFilesAreRemoved(t *testing.T) {
	dir := t.TempDir()
	f, err := createTemp(dir, "r.json", tempCheck)
	if err != nil {
		t.Fatal(err)
	}
	name := f.Name()
	_ = f.Close() // its lock ends as a killed process's would
	if err := CheckWritable(filepath.Join(dir, "r.json")); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(dir, "r.json"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(name); !os.IsNotExist(err) {
		t.Errorf("%s is still there (%v)", filepath.Base(name), err)
	}
}
