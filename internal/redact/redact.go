// Package redact is tollgate's one secret policy: which headers and names
// are secret, and how known secret values and URL passwords are removed from
// anything shown. Every writer, error message and validate --print goes
// through it, so the policy cannot drift between copies.
package redact

import (
	"cmp"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Value replaces a secret wherever one would be shown.
const Value = "[REDACTED]"

// alwaysSecretHeaders carry credentials by definition, so they are redacted
// whatever the scenario's secret_headers says. Lower case; compared
// case-insensitively, as HTTP header names are.
var alwaysSecretHeaders = []string{
	"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key",
}

// IsSecretHeader reports whether the header name is always secret or is
// one of extra (a scenario's secret_headers), ignoring case.
func IsSecretHeader(name string, extra []string) bool {
	for _, list := range [][]string{alwaysSecretHeaders, extra} {
		for _, s := range list {
			if strings.EqualFold(strings.TrimSpace(s), strings.TrimSpace(name)) {
				return true
			}
		}
	}
	return false
}

// secretWords are the words of a name that mark its value as probably
// secret (api_key, auth-token, dbPassword).
var secretWords = []string{
	"key", "apikey", "token", "secret", "password", "passwd", "credential", "credentials", "auth", "cookie",
}

// IsSecretName reports whether a var (or field) name looks like it holds a
// secret. It matches whole words (split at _ - . and camelCase humps), so
// min_decode_tokens_per_s and monkey stay visible. A name ending in _env
// holds the name of an environment variable, not its value, and is not
// secret.
func IsSecretName(name string) bool {
	if strings.HasSuffix(strings.ToLower(name), "_env") {
		return false
	}
	for _, w := range words(name) {
		if slices.Contains(secretWords, w) {
			return true
		}
	}
	return false
}

// words splits a name into lower-case words at separators and at a lower
// case letter or digit followed by an upper case one (apiKey → api, key).
func words(name string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	prev := rune(0)
	for _, r := range name {
		switch {
		case r == '_' || r == '-' || r == '.' || unicode.IsSpace(r):
			flush()
		case unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
		prev = r
	}
	flush()
	return out
}

// Redactor removes known secret values from text. It is immutable once
// built, so one may be shared by concurrent requests. The zero value and a
// nil *Redactor still remove URL passwords.
type Redactor struct {
	secrets []string // longest first, no empties, no duplicates
}

// New returns a Redactor for the given secret values; empty ones are
// ignored. Longer secrets are replaced first, so a secret that contains
// another is removed whole rather than leaving its remainder visible.
func New(secrets ...string) *Redactor {
	var s []string
	for _, v := range secrets {
		if v != "" && !slices.Contains(s, v) {
			s = append(s, v)
		}
	}
	slices.SortStableFunc(s, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return &Redactor{secrets: s}
}

// String returns s with every known secret and every password in a URL's
// userinfo replaced by Value.
func (r *Redactor) String(s string) string {
	if r != nil {
		for _, sec := range r.secrets {
			s = strings.ReplaceAll(s, sec, Value)
		}
	}
	return redactURLPasswords(s)
}

// Error returns err with String applied to its text, still matching what
// err wraps (errors.Is, errors.As); nil for nil.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	return &redactedError{msg: r.String(err.Error()), err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// Writer returns w with String applied to every Write. It suits streams
// written a whole message per Write (fmt.Fprintf to stderr): a secret split
// across two writes is not recognised.
func (r *Redactor) Writer(w io.Writer) io.Writer { return writer{r: r, w: w} }

type writer struct {
	r *Redactor
	w io.Writer
}

func (w writer) Write(p []byte) (int, error) {
	s := string(p)
	if red := w.r.String(s); red != s {
		if _, err := io.WriteString(w.w, red); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return w.w.Write(p)
}

// userinfoPassword finds scheme://user:password@ in free text; the password
// may not hold '@', '/' or white space, as in a URL it must be escaped.
var userinfoPassword = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]*):[^\s/@]*@`)

// queryParam finds name=value after a URL's ? or & in free text.
var queryParam = regexp.MustCompile(`([?&])([^=&?\s"'#<>]+)=([^&\s"'#<>\\]*)`)

// queryOnlyWords mark query parameters as secret beyond secretWords: signed
// URLs carry their credential as sig= or signature=.
var queryOnlyWords = []string{"sig", "signature"}

// isSecretParam reports whether a URL query parameter's name looks secret
// (api_key=, access_token=, sig=).
func isSecretParam(name string) bool {
	if n, err := url.QueryUnescape(name); err == nil {
		name = n
	}
	if IsSecretName(name) {
		return true
	}
	for _, w := range words(name) {
		if slices.Contains(queryOnlyWords, w) {
			return true
		}
	}
	return false
}

// redactURLPasswords removes from free text every URL userinfo password
// and the value of every secret-named query parameter.
func redactURLPasswords(s string) string {
	if !strings.Contains(s, "://") {
		return s // the common case, without the regexp
	}
	s = userinfoPassword.ReplaceAllString(s, "${1}:"+Value+"@")
	if !strings.ContainsAny(s, "?&") {
		return s
	}
	return queryParam.ReplaceAllStringFunc(s, func(m string) string {
		sub := queryParam.FindStringSubmatch(m)
		if sub[3] == "" || sub[3] == Value || !isSecretParam(sub[2]) {
			return m
		}
		return sub[1] + sub[2] + "=" + Value
	})
}

// URL returns raw with the password of its userinfo and the values of its
// secret-named query parameters replaced by Value
// (http://user:pw@host/?api_key=k → http://user:[REDACTED]@host/?api_key=[REDACTED]);
// the user name and other parameters stay, as they tell which account and
// API version were used. Text that does not parse as a URL is scrubbed as
// free text.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return redactURLPasswords(raw)
	}
	if _, ok := u.User.Password(); !ok {
		return redactURLPasswords(raw)
	}
	// url.URL.Redacted writes "xxxxx"; the report says [REDACTED] everywhere.
	u.User = url.UserPassword(u.User.Username(), "REDACTED")
	return redactURLPasswords(strings.Replace(u.String(), ":REDACTED@", ":"+Value+"@", 1))
}

// URLSecrets returns the password of raw's userinfo and the values of its
// secret-named query parameters, each as written and as decoded (they
// differ when percent-escaped), for a Redactor, so an error that quotes the
// URL either way, or a server that echoes it, does not leak them.
func URLSecrets(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	var out []string
	for _, kv := range strings.Split(u.RawQuery, "&") {
		k, v, _ := strings.Cut(kv, "=")
		if v == "" || !isSecretParam(k) {
			continue
		}
		out = append(out, v)
		if dec, err := url.QueryUnescape(v); err == nil && dec != v {
			out = append(out, dec)
		}
	}
	if u.User == nil {
		return out
	}
	pw, ok := u.User.Password()
	if !ok || pw == "" {
		return out
	}
	out = append(out, pw)
	// The escaped form as written: in the authority (up to the first / ? #),
	// between the userinfo's first ':' and its last '@'.
	if _, rest, ok := strings.Cut(raw, "://"); ok {
		if end := strings.IndexAny(rest, "/?#"); end >= 0 {
			rest = rest[:end]
		}
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if _, esc, ok := strings.Cut(rest[:at], ":"); ok && esc != pw {
				out = append(out, esc)
			}
		}
	}
	return out
}
