package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// validate --print heads the effective scenario with the scenario's own
// header comment: an included file's header describes that file, however
// its comment is attached (after a blank line, yaml.v3 keeps it on the
// document; without one, on the first key).
func TestPrintableHeader(t *testing.T) {
	for _, tc := range []struct {
		name, base, main string
		want             string // the effective scenario starts with it
	}{
		{name: "the base's header on its first key",
			base: "# base.yaml: shared targets\ntargets:\n  sim: {kind: embedded}\nphases:\n  decode: {max_tokens: 8}\n",
			main: "# main.yaml: the decode scenario\ninclude: base.yaml\nname: main\n",
			want: "# main.yaml: the decode scenario\n\ntargets:"},
		{name: "the base's header on the document",
			base: "# base.yaml: shared targets\n\ntargets:\n  sim: {kind: embedded}\nphases:\n  decode: {max_tokens: 8}\n",
			main: "# main.yaml: the decode scenario\n\ninclude: base.yaml\nname: main\n",
			want: "# main.yaml: the decode scenario\n\ntargets:"},
		{name: "a scenario without a header", base: "# base.yaml: shared targets\ntargets:\n  sim: {kind: embedded}\nphases:\n  decode: {}\n",
			main: "include: base.yaml\nname: main\n", want: "targets:"},
		{name: "a key's own comment stays", base: "# base.yaml\n\n# the simulator\ntargets:\n  sim: {kind: embedded}\nphases:\n  decode: {}\n",
			main: "include: base.yaml\n", want: "# the simulator\ntargets:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range map[string]string{"base.yaml": tc.base, "main.yaml": tc.main} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			sc, err := Load(filepath.Join(dir, "main.yaml"), Options{LookupEnv: noEnv})
			if err != nil {
				t.Fatal(err)
			}
			out := string(sc.Printable())
			if !strings.HasPrefix(out, tc.want) || strings.Contains(out, "base.yaml") {
				t.Errorf("effective scenario:\n%s\nwant it to start with %q, without the base's header", out, tc.want)
			}
		})
	}
}
