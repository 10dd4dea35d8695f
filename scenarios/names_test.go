package scenarios

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestEnvNameFieldsRefuseKeysWithoutEchoing(t *testing.T) {
	const secret = "sk-proj-Zq8vN3xLr7TfW2kPb9YcD4hJ"
	head := "phases: {decode: {}}\ntargets:\n  srv:\n    kind: openai\n    base_url: http://127.0.0.1:1\n"
	env := func(k string) (string, bool) {
		if k == "OPENAI_API_KEY" {
			return secret, true
		}
		return "", false
	}
	for _, tc := range []struct {
		name, src, secret string
		opts              Options
		want              string // position and message prefix
	}{
		{name: "sk- prefix", src: head + "    api_key_env: " + secret + "\n", secret: secret, want: "t.yaml:6:18: targets.srv.api_key_env must name an environment variable"},
		{name: "bearer with a space", src: head + "    api_key_env: Bearer abcdef123\n", secret: "abcdef123", want: "t.yaml:6:18: targets.srv.api_key_env must name"},
		{name: "NAME=VALUE", src: head + "    api_key_env: OPENAI_API_KEY=abc123secret\n", secret: "abc123secret", want: "t.yaml:6:18: targets.srv.api_key_env must name"},
		{name: "hex token", src: head + "    api_key_env: 3f9a1c0e7b5d42a8c6e1f0b9d3a7c5e2\n", secret: "3f9a1c0e7b5d42a8c6e1f0b9d3a7c5e2", want: "t.yaml:6:18: targets.srv.api_key_env must name"},
		{name: "base62 key", src: head + "    api_key_env: AbCdEf12345GhIjKl67890MnOp\n", secret: "AbCdEf12345GhIjKl67890MnOp", want: "t.yaml:6:18: targets.srv.api_key_env must name"},
		{name: "interpolated key", src: head + "    api_key_env: ${env.OPENAI_API_KEY}\n", secret: secret, want: "t.yaml:6:18: targets.srv.api_key_env must name"},
		{name: "key through a var", src: "vars: {k: " + secret + "}\n" + head + "    api_key_env: ${vars.k}\n", secret: secret, want: "t.yaml:7:18: targets.srv.api_key_env must name"},
		{name: "key through --set", src: head, opts: Options{Sets: []string{"targets.srv.api_key_env=" + secret}}, secret: secret,
			want: "--set targets.srv.api_key_env=…: targets.srv.api_key_env must name"},
		{name: "key through --var", src: "vars: {k: X}\n" + head + "    api_key_env: ${vars.k}\n", opts: Options{Vars: []string{"k=" + secret}}, secret: secret,
			want: "--var k=…: targets.srv.api_key_env must name"},
		{name: "key as an env reference name", src: head + "    model: ${env." + secret + "}\n", secret: secret, want: "t.yaml:6:12: ${env.NAME}: NAME must name an environment variable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.opts.LookupEnv == nil {
				tc.opts.LookupEnv = env
			}
			_, err := Parse("t.yaml", []byte(tc.src), tc.opts)
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("want an ErrorList, got %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("errors:\n%v\nwant one containing %q", err, tc.want)
			}
			if tc.secret != "" && strings.Contains(err.Error(), tc.secret) {
				t.Errorf("the error echoes the value %q:\n%v", tc.secret, err)
			}
		})
	}
	for _, name := range []string{"OPENAI_API_KEY", "my_key", "_K", "VLLM_API_KEY_FOR_PRODUCTION_CLUSTER_2", `""`} {
		t.Run("accepts "+name, func(t *testing.T) {
			if _, err := Parse("t.yaml", []byte(head+"    api_key_env: "+name+"\n"), Options{LookupEnv: env}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestHeaderValueNotEchoed(t *testing.T) {
	src := "targets:\n  srv:\n    kind: openai\n    base_url: http://127.0.0.1:1\n    headers: {Authorization: \"Bearer s3cr3t\\nX: y\"}\nphases: {decode: {}}\n"
	_, err := Parse("t.yaml", []byte(src), Options{LookupEnv: noEnv})
	if err == nil || !strings.Contains(err.Error(), "headers.Authorization: the value contains a CR, LF") {
		t.Fatalf("want a CR/LF error, got %v", err)
	}
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("the error echoes the header value: %v", err)
	}
}

func TestCAFileWithCertificateLoads(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(good, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	keyOnly := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(keyOnly, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("x")}), 0o600); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(dir, "broken.pem")
	if err := os.WriteFile(broken, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not DER")}), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file    string
		fails, noCert bool
	}{
		{name: "one certificate", file: good},
		{name: "a key, no certificate", file: keyOnly, fails: true, noCert: true},
		{name: "a certificate that does not parse", file: broken, fails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkCAFile(tc.file)
			if (err != nil) != tc.fails || errors.Is(err, ErrNoCertificate) != tc.noCert {
				t.Fatalf("checkCAFile: %v (want failure %v, ErrNoCertificate %v)", err, tc.fails, tc.noCert)
			}
			src := "targets:\n  srv: {kind: openai, base_url: \"https://127.0.0.1:1\", ca_file: " + strconv.Quote(tc.file) + "}\nphases: {decode: {}}\n"
			_, err = Parse("t.yaml", []byte(src), Options{LookupEnv: noEnv})
			if (err != nil) != tc.fails {
				t.Fatalf("Parse: %v", err)
			}
		})
	}
}

func TestUnselectedProfileWithReferencesLoads(t *testing.T) {
	src := `vars: {c: 4}
targets:
  srv: {kind: openai, base_url: "http://127.0.0.1:1"}
phases: {load: {concurrency: 2, requests: 4}}
profiles:
  big:
    targets: {srv: {base_url: "http://127.0.0.1:2", api_key_env: K}}
    phases: {load: {concurrency: "${vars.c}"}}
`
	if _, err := Parse("t.yaml", []byte(src), Options{LookupEnv: noEnv}); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse("t.yaml", []byte(src), Options{LookupEnv: noEnv, Profile: "big"}); err != nil {
		t.Fatal(err)
	}
}

// profiles, or a profile, that is not a mapping could never be selected:
// it fails when the scenario loads, as an unknown key in an unselected
// profile does, not on the day someone passes --profile.
func TestProfilesThatCannotBeSelectedFailAtLoad(t *testing.T) {
	const head = "name: p\nphases:\n  decode: {}\n"
	for _, tc := range []struct {
		name, profiles, selected string
		want                     string // the first error
	}{
		{name: "profiles a string", profiles: "profiles: x\n",
			want: `t.yaml:4:11: profiles: expected a mapping of profile names to scenario keys, e.g. profiles: {ci: {vars: {n: 8}}}, got string "x"`},
		{name: "profiles a list", profiles: "profiles: [ci]\n",
			want: `t.yaml:4:11: profiles: expected a mapping of profile names to scenario keys, e.g. profiles: {ci: {vars: {n: 8}}}, got a list`},
		{name: "a profile a string", profiles: "profiles:\n  ci: x\n",
			want: `t.yaml:5:7: profiles.ci: expected a mapping of scenario keys, got string "x"`},
		{name: "a profile a list", profiles: "profiles:\n  ci: [1]\n",
			want: `t.yaml:5:7: profiles.ci: expected a mapping of scenario keys, got a list`},
		{name: "a profile null", profiles: "profiles:\n  ci:\n  ok: {vars: {}}\n",
			want: `t.yaml:5:6: profiles.ci: expected a mapping of scenario keys, got null`},
		{name: "a profile a string, another selected", profiles: "profiles:\n  ci: x\n  ok: {vars: {}}\n", selected: "ok",
			want: `t.yaml:5:7: profiles.ci: expected a mapping of scenario keys, got string "x"`},
		{name: "the selected profile a string", profiles: "profiles:\n  ci: x\n", selected: "ci",
			want: `t.yaml:5:7: profiles.ci: expected a mapping of scenario keys, got string "x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(head+tc.profiles), Options{LookupEnv: noEnv, Profile: tc.selected})
			var list ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("error %v, want an ErrorList", err)
			}
			if got := list[0].Error(); got != tc.want {
				t.Errorf("got:\n%v\nwant first:\n%s", err, tc.want)
			}
		})
	}
	for _, ok := range []string{"", "profiles:\n", "profiles: {}\n", "profiles:\n  ci: {vars: {}}\n"} {
		if _, err := Parse("t.yaml", []byte(head+ok), Options{LookupEnv: noEnv}); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}
