package redact

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestIsSecretHeader(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header string
		extra  []string
		want   bool
	}{
		{name: "authorization", header: "Authorization", want: true},
		{name: "case does not matter", header: "aUtHoRiZaTiOn", want: true},
		{name: "proxy authorization", header: "Proxy-Authorization", want: true},
		{name: "cookie", header: "Cookie", want: true},
		{name: "set-cookie", header: "Set-Cookie", want: true},
		{name: "x-api-key", header: "X-API-Key", want: true},
		{name: "api-key (Azure)", header: "api-key", want: true},
		{name: "marked secret by the scenario", header: "x-tenant", extra: []string{"X-Tenant"}, want: true},
		{name: "ordinary header", header: "X-Session", extra: []string{"X-Tenant"}, want: false},
		{name: "a prefix is not a match", header: "Authorization-Hint", want: false},
		{name: "empty", header: "", want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsSecretHeader(tc.header, tc.extra); got != tc.want {
				t.Errorf("IsSecretHeader(%q, %q) = %v, want %v", tc.header, tc.extra, got, tc.want)
			}
		})
	}
}

func TestIsSecretName(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     bool
	}{
		{name: "api_key", in: "api_key", want: true},
		{name: "apikey", in: "apikey", want: true},
		{name: "camel case", in: "apiKey", want: true},
		{name: "hyphenated token", in: "auth-token", want: true},
		{name: "password", in: "db.password", want: true},
		{name: "passwd", in: "PASSWD", want: true},
		{name: "secret", in: "client_secret", want: true},
		{name: "credentials", in: "gcp_credentials", want: true},
		{name: "cookie", in: "session_cookie", want: true},
		{name: "env var names are not secrets", in: "api_key_env", want: false},
		{name: "tokens is not token", in: "min_decode_tokens_per_s", want: false},
		{name: "a word inside a word", in: "monkey", want: false},
		{name: "author", in: "author", want: false},
		{name: "plain", in: "base_url", want: false},
		{name: "max_tokens", in: "max_tokens", want: false},
		{name: "keyboard", in: "keyboard", want: false},
		{name: "session", in: "session", want: false},
		{name: "empty", in: "", want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsSecretName(tc.in); got != tc.want {
				t.Errorf("IsSecretName(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestRedactorString(t *testing.T) {
	for _, tc := range []struct {
		name    string
		secrets []string
		in      string
		want    string
	}{
		{name: "one secret", secrets: []string{"sk-123"}, in: "bad key sk-123 given", want: "bad key [REDACTED] given"},
		{name: "every occurrence", secrets: []string{"sk-1"}, in: "sk-1 sk-1", want: "[REDACTED] [REDACTED]"},
		{name: "a secret inside another is removed whole, whatever the order",
			secrets: []string{"abc", "abcdef"}, in: "key abcdef", want: "key [REDACTED]"},
		{name: "empty secrets are ignored", secrets: []string{"", "x9"}, in: "a x9 b", want: "a [REDACTED] b"},
		{name: "duplicates", secrets: []string{"k", "k"}, in: "k", want: "[REDACTED]"},
		{name: "no secrets leaves text", in: "plain text", want: "plain text"},
		{name: "URL passwords go without being known",
			in: `Get "http://bob:hunter2@example.com:8000/v1/models": EOF`, want: `Get "http://bob:[REDACTED]@example.com:8000/v1/models": EOF`},
		{name: "a port is not a password", in: "dial http://example.com:8000/v1 failed", want: "dial http://example.com:8000/v1 failed"},
		{name: "an email after a URL is left", in: "see http://example.com:80 or mail a@b.c", want: "see http://example.com:80 or mail a@b.c"},
		{name: "secret query values go without being known",
			in: `Get "https://h/v1/chat?api-version=1&api_key=k9&x=2": EOF`, want: `Get "https://h/v1/chat?api-version=1&api_key=[REDACTED]&x=2": EOF`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := New(tc.secrets...).String(tc.in); got != tc.want {
				t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestNilRedactor(t *testing.T) {
	var r *Redactor
	if got := r.String("http://u:p@h/ and text"); got != "http://u:[REDACTED]@h/ and text" {
		t.Errorf("nil Redactor: %q", got)
	}
}

func TestWriter(t *testing.T) {
	var b strings.Builder
	w := New("sk-9").Writer(&b)
	for _, msg := range []string{"key sk-9 refused\n", "GET http://u:pw@h/: EOF\n", "plain\n"} {
		if n, err := w.Write([]byte(msg)); err != nil || n != len(msg) {
			t.Fatalf("Write(%q) = %d, %v; want %d, nil", msg, n, err, len(msg))
		}
	}
	if want := "key [REDACTED] refused\nGET http://u:[REDACTED]@h/: EOF\nplain\n"; b.String() != want {
		t.Errorf("wrote %q, want %q", b.String(), want)
	}
}

func TestURL(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{name: "user and password", in: "http://user:pw@host:8000/v1", want: "http://user:[REDACTED]@host:8000/v1"},
		{name: "user only is kept", in: "https://user@host", want: "https://user@host"},
		{name: "no userinfo", in: "http://127.0.0.1:8000", want: "http://127.0.0.1:8000"},
		{name: "escaped password", in: "http://u:p%40ss@host/", want: "http://u:[REDACTED]@host/"},
		{name: "empty password", in: "http://u:@host", want: "http://u:[REDACTED]@host"},
		{name: "not a URL", in: "embedded", want: "embedded"},
		{name: "unparsable still scrubbed", in: "http://u:pw@ho st%zz", want: "http://u:[REDACTED]@ho st%zz"},
		{name: "empty", in: "", want: ""},
		{name: "secret query parameters", in: "https://h/v1?api-version=2024&api_key=k1&access_token=t2&sig=s3",
			want: "https://h/v1?api-version=2024&api_key=[REDACTED]&access_token=[REDACTED]&sig=[REDACTED]"},
		{name: "password and query", in: "http://u:pw@h/?token=t", want: "http://u:[REDACTED]@h/?token=[REDACTED]"},
		{name: "harmless parameters kept", in: "http://h/?model=m&monkey=1", want: "http://h/?model=m&monkey=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := URL(tc.in); got != tc.want {
				t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestURLSecrets(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{name: "plain password", in: "http://u:pw@host", want: []string{"pw"}},
		{name: "escaped password gives both forms", in: "http://u:p%40ss@host/a@b", want: []string{"p@ss", "p%40ss"}},
		{name: "no password", in: "http://u@host", want: nil},
		{name: "no userinfo", in: "http://host", want: nil},
		{name: "query values, escaped and decoded", in: "http://host/?api_key=a%2Fb&x=1", want: []string{"a%2Fb", "a/b"}},
		{name: "query and password", in: "http://u:pw@host/?token=t", want: []string{"t", "pw"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := URLSecrets(tc.in)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("URLSecrets(%q) = %q, want %q", tc.in, got, tc.want)
			}
			// What URLSecrets returns is enough to scrub the URL as written.
			if s := New(got...).String(tc.in); len(got) > 0 && strings.Contains(s, got[0]) {
				t.Errorf("still leaks: %q", s)
			}
		})
	}
}

// Error hides the secrets of an error's text and still matches what it
// wraps.
func TestRedactorError(t *testing.T) {
	sentinel := errors.New("push failed")
	err := New("tok-123").Error(fmt.Errorf("%w: the server said Bearer tok-123 to http://u:pw@h/", sentinel))
	if got := err.Error(); got != "push failed: the server said Bearer [REDACTED] to http://u:[REDACTED]@h/" {
		t.Errorf("got %q", got)
	}
	if !errors.Is(err, sentinel) {
		t.Error("the redacted error no longer matches what it wraps")
	}
	if New("x").Error(nil) != nil {
		t.Error("nil is not nil")
	}
}
