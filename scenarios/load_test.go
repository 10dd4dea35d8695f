package scenarios

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func noEnv(string) (string, bool) { return "", false }

// Every file in testdata/bad starts with "# want: LINE:COL: MESSAGE"; loading
// it must fail with an error at exactly that position that contains MESSAGE.
func TestBadScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bad scenarios: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(data), "\n")
			want, ok := strings.CutPrefix(first, "# want: ")
			if !ok {
				t.Fatalf("%s: first line must be '# want: LINE:COL: MESSAGE'", f)
			}
			_, err = Load(f, Options{LookupEnv: noEnv})
			if err == nil {
				t.Fatalf("loaded without error; want %q", want)
			}
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("error is %T, not an ErrorList: %v", err, err)
			}
			for _, e := range list {
				if e.Pos.Line == 0 {
					t.Errorf("error without a position: %v", e)
				}
			}
			if !strings.Contains(err.Error(), f+":"+want) {
				t.Errorf("errors:\n%v\nwant one containing:\n%s:%s", err, f, want)
			}
		})
	}
}

func TestAllErrorsAtOnce(t *testing.T) {
	src := `targets:
  route:
    kind: seam
    transprt: direct
    cache: cachd
phases:
  decode: {tokens: x}
`
	_, err := Parse("multi.yaml", []byte(src), Options{LookupEnv: noEnv})
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("want ErrorList, got %v", err)
	}
	for _, want := range []string{`multi.yaml:4:5: targets.route: unknown field "transprt"`, `multi.yaml:5:12: targets.route.cache`, `multi.yaml:7:20: phases.decode.tokens`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}

func TestMatrixExpansion(t *testing.T) {
	src := `matrix:
  transport: [direct, relay]
  cache: [cached, stateless]
targets:
  route: {kind: seam, transport: "${matrix.transport}", cache: "${matrix.cache}"}
phases: {prefill: {}}
`
	sc, err := Parse("m.yaml", []byte(src), Options{LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range sc.Runs {
		names = append(names, r.Name)
		if r.Target.Seam.Transport != r.Params[0].Value || r.Target.Seam.Cache != r.Params[1].Value {
			t.Errorf("run %s: target has %s/%s", r.Name, r.Target.Seam.Transport, r.Target.Seam.Cache)
		}
	}
	want := []string{"direct/cached", "direct/stateless", "relay/cached", "relay/stateless"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("runs %v, want %v", names, want)
	}
}

func TestSeveralTargetsPrefixRunNames(t *testing.T) {
	src := `matrix: {cache: [cached, stateless]}
targets:
  a: {kind: seam, transport: direct, cache: "${matrix.cache}"}
  b: {kind: seam, transport: relay, cache: "${matrix.cache}"}
phases: {prefill: {}}
`
	sc, err := Parse("t.yaml", []byte(src), Options{LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range sc.Runs {
		names = append(names, r.Name)
	}
	want := []string{"a/cached", "b/cached", "a/stateless", "b/stateless"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("runs %v, want %v", names, want)
	}
}

func TestInterpolation(t *testing.T) {
	env := func(k string) (string, bool) {
		if k == "TOLLGATE_TEST_MODE" {
			return "direct", true
		}
		return "", false
	}
	for _, tc := range []struct {
		name string
		env  func(string) (string, bool)
		mode string
	}{
		{name: "env default", env: noEnv, mode: "relay"},
		{name: "env set", env: env, mode: "direct"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := Load("testdata/good/three-nodes.yaml", Options{LookupEnv: tc.env})
			if err != nil {
				t.Fatal(err)
			}
			s := sc.Runs[0].Target.Seam
			if s.Transport != tc.mode {
				t.Errorf("transport %q, want %q", s.Transport, tc.mode)
			}
			if s.ActivationBytes != 8192 {
				t.Errorf("activation_bytes %d, want 8192 (from ${vars.size} = 8KiB)", s.ActivationBytes)
			}
			if sc.Vars["mode"] != tc.mode {
				t.Errorf("vars.mode %v, want %q", sc.Vars["mode"], tc.mode)
			}
			if got := sc.Gates[0].Expr; got != `"${not a ref}" == "$" + "{not a ref}"` {
				t.Errorf("escape: expr %q", got)
			}
		})
	}
}

func TestWholeReferenceKeepsType(t *testing.T) {
	src := `vars:
  tokens: [x, y, z]
  n: 2
targets:
  route: {kind: seam, transport: direct, cache: cached, output_tokens: "${vars.tokens}"}
phases:
  decode: {tokens: "${vars.n}"}
`
	sc, err := Parse("q.yaml", []byte(src), Options{LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.Runs[0].Target.Seam.OutputTokens; !reflect.DeepEqual(got, []string{"x", "y", "z"}) {
		t.Errorf("output_tokens %v", got)
	}
	if sc.Phases[0].Tokens != 2 {
		t.Errorf("tokens %d", sc.Phases[0].Tokens)
	}
}

// The scenarios --set tests run on.
const (
	setSeam   = "testdata/good/three-nodes.yaml" // one seam target, route
	setServed = "testdata/good/served.yaml"      // one embedded target, server, over a matrix
	setQuick  = "../examples/quickstart.yaml"    // no targets: the implicit embedded one
)

// setCase is one --set test: the flags on a file, and the error wanted
// or a check of the scenario.
type setCase struct {
	name    string
	file    string // default setSeam
	sets    []string
	wantErr string
	check   func(t *testing.T, sc *Scenario)
}

func runSetCases(t *testing.T, cases []setCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := tc.file
			if file == "" {
				file = setSeam
			}
			sc, err := Load(file, Options{Sets: tc.sets, LookupEnv: noEnv})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, sc)
		})
	}
}

func TestSet(t *testing.T) {
	everyRun := func(f func(t *testing.T, r *Run)) func(t *testing.T, sc *Scenario) {
		return func(t *testing.T, sc *Scenario) {
			if len(sc.Runs) == 0 {
				t.Fatal("no runs")
			}
			for _, r := range sc.Runs {
				t.Run(r.Name, func(t *testing.T) { f(t, r) })
			}
		}
	}
	runSetCases(t, []setCase{
		{name: "overrides a value", sets: []string{"targets.route.activation_bytes=8192"}, check: func(t *testing.T, sc *Scenario) {
			if sc.Runs[0].Target.Seam.ActivationBytes != 8192 {
				t.Errorf("activation_bytes %d", sc.Runs[0].Target.Seam.ActivationBytes)
			}
		}},
		{name: "parses YAML", sets: []string{"targets.route.output_tokens=[p, q]"}, check: func(t *testing.T, sc *Scenario) {
			if !reflect.DeepEqual(sc.Runs[0].Target.Seam.OutputTokens, []string{"p", "q"}) {
				t.Errorf("output_tokens %v", sc.Runs[0].Target.Seam.OutputTokens)
			}
		}},
		{name: "overrides a var before interpolation", sets: []string{"vars.mode=direct"}, check: func(t *testing.T, sc *Scenario) {
			if sc.Runs[0].Target.Seam.Transport != "direct" {
				t.Errorf("transport %q", sc.Runs[0].Target.Seam.Transport)
			}
		}},
		{name: "adds an optional field", sets: []string{"targets.route.session_id=s1"}, check: func(t *testing.T, sc *Scenario) {
			if sc.Runs[0].Target.Seam.SessionID != "s1" {
				t.Errorf("session_id %q", sc.Runs[0].Target.Seam.SessionID)
			}
		}},
		{name: "indexes lists", sets: []string{"gates.0.name=renamed"}, check: func(t *testing.T, sc *Scenario) {
			if sc.Gates[0].Name != "renamed" {
				t.Errorf("gate name %q", sc.Gates[0].Name)
			}
		}},
		{name: "adds a header where there are none", file: setServed, sets: []string{"targets.server.headers.Connection=close"}, check: everyRun(func(t *testing.T, r *Run) {
			if got := r.Target.OpenAI.Headers; !reflect.DeepEqual(got, map[string]string{"Connection": "close"}) {
				t.Errorf("headers %v", got)
			}
		})},
		{name: "adds a body field", file: setServed, sets: []string{"targets.server.body.top_k=1"}, check: everyRun(func(t *testing.T, r *Run) {
			if got := r.Target.OpenAI.Body; !reflect.DeepEqual(got, map[string]any{"top_k": 1}) {
				t.Errorf("body %v", got)
			}
		})},
		{name: "fills an empty block", file: setServed, sets: []string{"targets.server.sim.ttft_base=5ms"}, check: everyRun(func(t *testing.T, r *Run) {
			if s := r.Target.OpenAI.Sim; s == nil || s.TTFTBase.Duration != 5*time.Millisecond {
				t.Errorf("sim %+v", s)
			}
		})},
		{name: "adds a nested list item in a sim block", file: setServed, sets: []string{"targets.server.sim.faults.0.kind=http_503", "targets.server.sim.faults.0.every_nth=5"},
			check: everyRun(func(t *testing.T, r *Run) {
				if s := r.Target.OpenAI.Sim; s == nil || len(s.Faults) != 1 || s.Faults[0].Kind != "http_503" || s.Faults[0].EveryNth != 5 {
					t.Errorf("sim %+v", s)
				}
			})},
		{name: "adds under every matrix run", file: setServed, sets: []string{"targets.server.timeouts.total=30s"}, check: func(t *testing.T, sc *Scenario) {
			if len(sc.Runs) != 2 {
				t.Fatalf("%d runs, want one per endpoint", len(sc.Runs))
			}
			everyRun(func(t *testing.T, r *Run) {
				if r.Target.OpenAI.Timeouts.Total.Duration != 30*time.Second || r.Target.OpenAI.Endpoint != r.Params[0].Value {
					t.Errorf("timeouts %+v endpoint %q", r.Target.OpenAI.Timeouts, r.Target.OpenAI.Endpoint)
				}
			})(t, sc)
		}},
		{name: "adds a matrix axis", file: setServed, sets: []string{"matrix.seed=[1, 2]", "targets.server.sim.seed=${matrix.seed}"}, check: func(t *testing.T, sc *Scenario) {
			if len(sc.Runs) != 4 || sc.Runs[3].Name != "completions/2" || sc.Runs[3].Target.OpenAI.Sim.Seed != 2 {
				t.Errorf("runs %d, last %+v", len(sc.Runs), sc.Runs[len(sc.Runs)-1])
			}
		}},
		{name: "appends to a list", file: setServed, sets: []string{"targets.server.secret_headers.1=X-Other"}, check: func(t *testing.T, sc *Scenario) {
			if got := sc.Runs[0].Target.OpenAI.SecretHeaders; !reflect.DeepEqual(got, []string{"X-Tenant", "X-Other"}) {
				t.Errorf("secret_headers %v", got)
			}
		}},
		{name: "appends a whole gate", sets: []string{`gates.1={name: two, expr: "true"}`}, check: func(t *testing.T, sc *Scenario) {
			if len(sc.Gates) != 2 || sc.Gates[1].Name != "two" {
				t.Errorf("gates %+v", sc.Gates)
			}
		}},
		{name: "writes out the implicit embedded target", file: setQuick, sets: []string{"targets.embedded.headers.Connection=close"}, check: func(t *testing.T, sc *Scenario) {
			if len(sc.Runs) != 1 || sc.Runs[0].Name != KindEmbedded || sc.Runs[0].Target.Kind != KindEmbedded || sc.Runs[0].Target.OpenAI.Headers["Connection"] != "close" {
				t.Errorf("runs %+v", sc.Runs)
			}
		}},
	})
}

// TestSetRefused: the --set flags refused, each with a message that names
// the flag and, for a misspelling, the near names.
func TestSetRefused(t *testing.T) {
	runSetCases(t, []setCase{
		{name: "misspelt segment", file: setServed, sets: []string{"targets.server.hedaers.X=1"}, wantErr: `--set targets.server.hedaers.X=1: unknown path: targets.server has no key "hedaers" (did you mean "headers"?)`},
		{name: "misspelt key in a new block", sets: []string{"targets.route.compression.levle=9"}, wantErr: `--set targets.route.compression.levle=9: unknown path: targets.route.compression has no key "levle" (did you mean "level"?)`},
		{name: "a seam target takes no headers", sets: []string{"targets.route.headers.X=1"}, wantErr: `unknown path: targets.route has no key "headers"`},
		{name: "misspelt implicit target", file: setQuick, sets: []string{"targets.embeded.headers.X=1"}, wantErr: `unknown path: targets has no key "embeded" (did you mean "embedded"?); a new one needs kind`},
		{name: "a new target needs its kind", sets: []string{"targets.rout.cache=cached"}, wantErr: `--set targets.rout.cache=cached: unknown path: targets has no key "rout" (did you mean "route"?); a new one needs kind, so set it whole (--set targets.rout={kind: ...})`},
		{name: "a new gate needs name and expr", sets: []string{"gates.1.name=x"}, wantErr: `unknown path: gates is a list of 1; a new item needs expr`},
		{name: "unknown field", sets: []string{"targets.route.cahce=cached"}, wantErr: `--set targets.route.cahce=cached: unknown path: targets.route has no key "cahce" (did you mean "cache"?)`},
		{name: "path into a scalar", sets: []string{"targets.route.cache.x=1"}, wantErr: `--set targets.route.cache.x=1: unknown path: targets.route.cache is string "stateless", not a mapping or list`},
		{name: "path into a scalar the file lacks", sets: []string{"targets.route.session_id.x=1"}, wantErr: `unknown path: targets.route.session_id takes a single value, not keys`},
		{name: "index out of range", sets: []string{"gates.5.name=x"}, wantErr: `unknown path: gates is a list of 1; "5" is not an index in it (0 to 0, or 1 to add one)`},
		{name: "index past the end of a list", file: setServed, sets: []string{"targets.server.secret_headers.2=X"}, wantErr: `targets.server.secret_headers is a list of 1; "2" is not an index in it`},
		{name: "empty key", sets: []string{"targets..cache=x"}, wantErr: `has an empty key`},
		{name: "profiles are already applied", sets: []string{"profiles.ci.vars.mode=direct"}, wantErr: `profiles is resolved before --set applies`},
		{name: "replace_gates is already applied", sets: []string{"replace_gates=true"}, wantErr: `replace_gates is resolved before --set applies`},
		{name: "wrong type", sets: []string{"targets.route.activation_bytes=[1]"}, wantErr: `--set targets.route.activation_bytes=[1]: targets.route.activation_bytes: expected a size`},
		{name: "a new value is type-checked", file: setServed, sets: []string{"targets.server.headers.X=[1]"}, wantErr: `--set targets.server.headers.X=[1]: targets.server.headers`},
		{name: "no equals", sets: []string{"targets.route.cache"}, wantErr: "expected PATH=VALUE"},
		{name: "misspelt var", sets: []string{"vars.moed=relay"}, wantErr: `--set vars.moed=relay: the scenario has no var "moed" (did you mean "mode"?)`},
		{name: "a new var is refused too", sets: []string{"vars.extra=1"}, wantErr: `--set vars.extra=1: the scenario has no var "extra"`},
		{name: "no vars at all", file: setServed, sets: []string{"vars.x.y=1"}, wantErr: `--set vars.x.y=1: the scenario has no var "x"`},
	})
}

func TestSHA256ChangesWithEffectiveScenario(t *testing.T) {
	a, err := Load("testdata/good/three-nodes.yaml", Options{LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load("testdata/good/three-nodes.yaml", Options{LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load("testdata/good/three-nodes.yaml", Options{LookupEnv: noEnv, Sets: []string{"vars.size=16KiB"}})
	if err != nil {
		t.Fatal(err)
	}
	if a.SHA256 != b.SHA256 || a.SHA256 == c.SHA256 || len(a.SHA256) != 64 {
		t.Errorf("sha256: same file %s vs %s; with --set %s", a.SHA256, b.SHA256, c.SHA256)
	}
}

func TestSizes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Size
		err  bool
	}{
		{in: "4096", want: 4096}, {in: "4KiB", want: 4096}, {in: "4KB", want: 4000}, {in: "1.5MiB", want: 1572864},
		{in: "2 GiB", want: 2 << 30}, {in: "4XB", err: true}, {in: "lots", err: true}, {in: "0.5B", err: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSize(tc.in)
			if (err != nil) != tc.err || (!tc.err && got != tc.want) {
				t.Errorf("ParseSize(%q) = %d, %v", tc.in, got, err)
			}
		})
	}
}

func TestExamplesLoad(t *testing.T) {
	files, _ := filepath.Glob("../examples/*.yaml")
	if len(files) == 0 {
		t.Fatal("no examples")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(data), "# yaml-language-server: $schema=") {
				t.Errorf("%s must start with the yaml-language-server schema comment", f)
			}
			if _, err := Load(f, Options{LookupEnv: noEnv}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestIncludesMergeDeeplyAndLaterWins(t *testing.T) {
	sc, err := Load("testdata/include/team.yaml", Options{LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	s := sc.Runs[0].Target.Seam
	if sc.Name != "team" || s.Costs.TransportMS.Direct != 0.7 || s.Costs.ModelMS.Decode != 1 || s.Transport != "direct" {
		t.Errorf("name %q transport_ms %v model_ms %v transport %q", sc.Name, s.Costs.TransportMS.Direct, s.Costs.ModelMS.Decode, s.Transport)
	}
	if len(sc.Phases) != 2 || len(sc.Gates) != 1 {
		t.Errorf("phases %d gates %d", len(sc.Phases), len(sc.Gates))
	}
}

func TestProfilesAndVarPrecedence(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    Options
		mode    string
		tokens  int
		file    string // default testdata/include/team.yaml
		wantErr string
	}{
		{name: "file", mode: "direct"},
		{name: "profile", opts: Options{Profile: "ci"}, mode: "relay"},
		{name: "var over profile", opts: Options{Profile: "ci", Vars: []string{"mode=direct"}}, mode: "direct"},
		{name: "set over var", opts: Options{Vars: []string{"mode=relay"}, Sets: []string{"vars.mode=direct"}}, mode: "direct"},
		{name: "profile merges phases", opts: Options{Profile: "quick"}, mode: "direct", tokens: 1},
		// The flag is the mistake, not the file that declares the profiles.
		{name: "unknown profile", opts: Options{Profile: "cii"}, wantErr: `--profile cii: no such profile (did you mean "ci"?) (profiles: ci, quick, at testdata/include/base.yaml:16:3)`},
		{name: "no profiles", opts: Options{Profile: "ci"}, file: "testdata/good/minimal.yaml", wantErr: "--profile ci: the scenario has no profiles"},
		{name: "bad var", opts: Options{Vars: []string{"novalue"}}, wantErr: "--var novalue: expected NAME=VALUE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.LookupEnv = noEnv
			if tc.file == "" {
				tc.file = "testdata/include/team.yaml"
			}
			sc, err := Load(tc.file, tc.opts)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := sc.Runs[0].Target.Seam.Transport; got != tc.mode {
				t.Errorf("transport %q, want %q", got, tc.mode)
			}
			for _, p := range sc.Phases {
				if p.Name == "decode" && p.Tokens != tc.tokens {
					t.Errorf("decode tokens %d, want %d", p.Tokens, tc.tokens)
				}
			}
		})
	}
}

func TestIncludeErrors(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{file: "cycle-a.yaml", want: "testdata/include/cycle-b.yaml:1:10: include cycle: testdata/include/cycle-a.yaml → testdata/include/cycle-b.yaml → testdata/include/cycle-a.yaml"},
		{file: "missing.yaml", want: `testdata/include/missing.yaml:1:11: include "nope.yaml": cannot read testdata/include/nope.yaml`},
		// An error inside an included file names that file, line and column.
		{file: "bad-in-included.yaml", want: `testdata/include/broken-base.yaml:2:42: targets.route: unknown field "cahce" (did you mean "cache"?)`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			_, err := Load("testdata/include/"+tc.file, Options{LookupEnv: noEnv})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err:\n%v\nwant:\n%s", err, tc.want)
			}
		})
	}
}

func TestPrintableRedactsSecrets(t *testing.T) {
	env := func(k string) (string, bool) {
		if k == "TOLLGATE_TEST_TOKEN" {
			return "tok-0123456789", true
		}
		return "", false
	}
	sc, err := Load("testdata/include/secrets.yaml", Options{LookupEnv: env})
	if err != nil {
		t.Fatal(err)
	}
	out := string(sc.Printable())
	for _, secret := range []string{"tok-0123456789", "tenant-secret", "cookie-value-7", "url-pass-42"} {
		if strings.Contains(out, secret) {
			t.Errorf("secret %q printed:\n%s", secret, out)
		}
	}
	for _, visible := range []string{"OPENAI_API_KEY", "X-Session: visible", "plain: visible", "[REDACTED]", "http://bench:[REDACTED]@127.0.0.1:9"} {
		if !strings.Contains(out, visible) {
			t.Errorf("%q missing from:\n%s", visible, out)
		}
	}
}

// A live seam's endpoint headers are redacted in validate --print like a
// live target's.
func TestPrintableRedactsSeamEndpoint(t *testing.T) {
	sc, err := Parse("live.yaml", []byte(`
targets:
  route:
    kind: seam
    transport: direct
    cache: cached
    endpoint:
      base_url: "http://me:url-pass-77@127.0.0.1:9"
      headers: {Authorization: Bearer tok-555, X-Tenant: plain-visible, X-Tenant-Token: tenant-666}
      secret_headers: [X-Tenant-Token]
phases:
  prefill: {}
`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := string(sc.Printable())
	for _, secret := range []string{"url-pass-77", "tok-555", "tenant-666"} {
		if strings.Contains(out, secret) {
			t.Errorf("secret %q printed:\n%s", secret, out)
		}
	}
	if !strings.Contains(out, "plain-visible") {
		t.Errorf("a plain header was hidden:\n%s", out)
	}
}

// A base_url from --set or --var points a simulator scenario at a server,
// as examples/load-sweep.yaml says to: its sim block is dropped with a
// warning. The same pair written in the file is an error.
func TestSetBaseURLDropsTheSimBlock(t *testing.T) {
	src := []byte("vars: {url: embedded}\ntargets:\n  s:\n    kind: openai\n    base_url: ${vars.url}\n    sim: {decode_step: 1ms}\nphases:\n  decode: {prompt: {text: hi}}\n")
	for _, tc := range []struct {
		name string
		opts Options
		want string // the warning; "" when none
	}{
		{name: "--set base_url", opts: Options{Sets: []string{"targets.s.base_url=http://h:1"}},
			want: "s.yaml:6:5: targets.s.sim is ignored: base_url (--set targets.s.base_url=http://h:1) names a server"},
		{name: "--var feeding base_url", opts: Options{Vars: []string{"url=http://h:2"}},
			want: "s.yaml:6:5: targets.s.sim is ignored: base_url (--var url=http://h:2) names a server"},
		{name: "the simulator, as written", opts: Options{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.LookupEnv = noEnv
			sc, err := Parse("s.yaml", src, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(sc.Warnings, "\n"); got != tc.want {
				t.Errorf("warnings %q, want %q", got, tc.want)
			}
		})
	}
}

// A base_url the file leaves to the environment (${env.X} through a var,
// as examples/load-sweep.yaml does) is the runner's choice as much as a
// --var: the sim block is dropped with a warning, not refused. A server
// written literally beside sim stays an error.
func TestEnvBaseURLDropsTheSimBlock(t *testing.T) {
	src := []byte("vars: {url: '${env.URL:-}'}\ntargets:\n  s:\n    kind: openai\n    base_url: ${vars.url}\n    sim: {decode_step: 1ms}\nphases:\n  decode: {prompt: {text: hi}}\n")
	env := func(k string) (string, bool) {
		if k == "URL" {
			return "http://h:3", true
		}
		return "", false
	}
	sc, err := Parse("s.yaml", src, Options{LookupEnv: env})
	if err != nil {
		t.Fatal(err)
	}
	want := "s.yaml:6:5: targets.s.sim is ignored: base_url (${vars.url} at s.yaml:5:15, http://h:3) names a server"
	if got := strings.Join(sc.Warnings, "\n"); got != want {
		t.Errorf("warnings %q, want %q", got, want)
	}
	if sc.Runs[0].Target.Embedded() {
		t.Error("the target is still the simulator")
	}
	// Unset, the same file measures the simulator, without a word.
	sc, err = Parse("s.yaml", src, Options{LookupEnv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Warnings) != 0 || !sc.Runs[0].Target.Embedded() {
		t.Errorf("unset: warnings %q, embedded %v", sc.Warnings, sc.Runs[0].Target.Embedded())
	}
	literal := []byte("targets:\n  s:\n    kind: openai\n    base_url: http://h:4\n    sim: {decode_step: 1ms}\nphases:\n  decode: {prompt: {text: hi}}\n")
	if _, err := Parse("s.yaml", literal, Options{LookupEnv: noEnv}); err == nil || !strings.Contains(err.Error(), "s.yaml:5:5: targets.s.sim: configures the embedded simulator") {
		t.Errorf("a literal server beside sim: %v", err)
	}
}
