//go:build unix

package scenarios

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Every file a scenario names (include, dataset, trace, prompt file) is
// held to the same rules: a regular file, under a cap, inside the
// scenario's tree unless --allow-outside says otherwise. Each refusal is
// at the key's file:line:col and names the rule; none blocks, none quotes
// the file.
func TestNamedFiles(t *testing.T) {
	dir := t.TempDir()
	tree := filepath.Join(dir, "tree")
	outside := filepath.Join(dir, "outside")
	for _, d := range []string{filepath.Join(tree, "sub"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, body string) {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	chat := "{\"prompt\": \"hello there\"}\n{\"prompt\": \"second one\"}\n"
	trace := "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 2}\n"
	secret := "root:x:0:0:root:/root:/bin/bash " + strings.Repeat("daemon:x:1:1 ", 80) + "\n"
	write(filepath.Join(tree, "chat.jsonl"), chat)
	write(filepath.Join(outside, "chat.jsonl"), chat)
	write(filepath.Join(outside, "trace.jsonl"), trace)
	write(filepath.Join(outside, "passwd"), secret)
	write(filepath.Join(tree, "notes.txt"), secret) // in the tree, but not YAML
	for _, name := range []string{"fifo.jsonl", "fifo.yaml"} {
		if err := syscall.Mkfifo(filepath.Join(tree, name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(outside, "chat.jsonl"), filepath.Join(tree, "link.jsonl")); err != nil {
		t.Fatal(err)
	}
	for name, size := range map[string]int64{"huge.jsonl": MaxDataBytes + 1, "huge.yaml": MaxFileBytes + 1} {
		write(filepath.Join(tree, name), "")
		if err := os.Truncate(filepath.Join(tree, name), size); err != nil {
			t.Fatal(err)
		}
	}
	realOutside, _ := filepath.EvalSymlinks(outside)

	dataset := func(f string) string {
		return "phases:\n  p: {kind: load, concurrency: 1, requests: 1, prompt: {dataset: " + f + "}}\n"
	}
	for _, tc := range []struct {
		name string
		src  string
		opts Options
		want error  // nil: loads
		text string // a regexp the error matches
	}{
		{name: "dataset in the tree", src: dataset("chat.jsonl")},
		{name: "dataset fifo", src: dataset("fifo.jsonl"), want: ErrNotRegular,
			text: `s\.yaml:3:\d+: phases\.p\.prompt\.dataset: .*fifo\.jsonl: not a regular file: it is a named pipe \(FIFO\), and a dataset must be a regular file`},
		{name: "trace fifo", src: "phases:\n  p: {kind: trace, trace: {file: fifo.jsonl}}\n", want: ErrNotRegular,
			text: `s\.yaml:3:\d+: phases\.p\.trace\.file: .*named pipe`},
		{name: "include fifo", src: "include: fifo.yaml\n", want: ErrNotRegular,
			text: `s\.yaml:2:10: include "fifo\.yaml": cannot read .*named pipe \(FIFO\), and a scenario include must be a regular file`},
		{name: "prompt file fifo", src: "phases:\n  p: {kind: requests, prompt: {file: fifo.jsonl}}\n", want: ErrNotRegular,
			text: `s\.yaml:3:\d+: phases\.p\.prompt\.file: .*named pipe`},
		{name: "dataset directory", src: dataset("sub"), want: ErrNotRegular, text: `it is a directory`},
		{name: "dataset /dev/zero", src: dataset("/dev/zero"), opts: Options{AllowOutside: []string{"/dev"}}, want: ErrNotRegular,
			text: `/dev/zero: not a regular file: it is a character device`},
		{name: "dataset /dev/zero outside", src: dataset("/dev/zero"), want: ErrOutside,
			text: `s\.yaml:3:\d+: phases\.p\.prompt\.dataset: /dev/zero is outside the scenario's tree .*; to read it, pass --allow-outside /dev`},
		{name: "dataset over the cap", src: dataset("huge.jsonl"), want: ErrTooLarge,
			text: `huge\.jsonl: file too large: 1073741825 bytes \(1\.0 GiB\), over the 1 GiB cap on a dataset`},
		{name: "include over the cap", src: "include: huge.yaml\n", want: ErrTooLarge,
			text: `over the 1 MiB cap on a scenario include`},
		{name: "dataset outside", src: dataset("../outside/chat.jsonl"), want: ErrOutside,
			text: `s\.yaml:3:\d+: phases\.p\.prompt\.dataset: .*outside/chat\.jsonl is outside the scenario's tree \(allowed: .*tree\); to read it, pass --allow-outside ` + regexp.QuoteMeta(realOutside)},
		{name: "dataset symlink to outside", src: dataset("link.jsonl"), want: ErrOutside,
			text: `link\.jsonl resolves to ` + regexp.QuoteMeta(filepath.Join(realOutside, "chat.jsonl")) + `, which is outside`},
		{name: "trace outside", src: "phases:\n  p: {kind: trace, trace: {file: " + filepath.Join(outside, "trace.jsonl") + "}}\n", want: ErrOutside,
			text: `phases\.p\.trace\.file: .* outside the scenario's tree`},
		{name: "include outside", src: "include: [" + filepath.Join(outside, "passwd") + "]\n", want: ErrOutside,
			text: `s\.yaml:2:11: include .* outside the scenario's tree`},
		{name: "include /etc/passwd", src: "include: [/etc/passwd]\n", want: ErrOutside, text: `/etc/passwd is outside`},
		{name: "dataset outside, allowed", src: dataset("../outside/chat.jsonl"), opts: Options{AllowOutside: []string{outside}}},
		{name: "trace outside, allowed", src: "phases:\n  p: {kind: trace, trace: {file: ../outside/trace.jsonl}}\n", opts: Options{AllowOutside: []string{outside}}},
		{name: "dataset outside by --set", src: dataset("chat.jsonl"), opts: Options{Sets: []string{"phases.p.prompt.dataset=" + filepath.Join(outside, "chat.jsonl")}}},
		{name: "include of text in the tree", src: "include: notes.txt\n", want: nil,
			text: `notes\.txt:1:1: a scenario is a mapping .* got string "root:x:0:0:root:/root:/bin/bash daemon:x"…`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(tree, "s.yaml")
			write(path, "targets: {s: {kind: embedded}}\n"+tc.src)
			var err error
			done := make(chan struct{})
			go func() { defer close(done); _, err = Load(path, tc.opts) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Load still blocked after 10s")
			}
			if tc.want == nil && tc.text == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("loaded; want %v", tc.want)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("error does not wrap %v:\n%v", tc.want, err)
			}
			if !regexp.MustCompile(tc.text).MatchString(err.Error()) {
				t.Errorf("error:\n%v\nwant a match for %s", err, tc.text)
			}
			if strings.Contains(err.Error(), "daemon:x:1:1 daemon") {
				t.Errorf("the error quotes the file:\n%v", err)
			}
		})
	}
}
