package scenarios

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"github.com/tollgate-dev/tollgate/internal/safefile"
)

// envNameMsg is the whole message for a field that must name an environment
// variable but holds something else: the value is likely the secret itself,
// so it is never echoed.
const envNameMsg = "must name an environment variable (e.g. OPENAI_API_KEY), not hold the key; the value was not printed"

// isEnvName reports whether s is a portable environment variable name
// ([A-Za-z_][A-Za-z0-9_]*) that does not look like a pasted secret.
func isEnvName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return !looksLikeKey(s)
}

// looksLikeKey catches keys made only of name characters (hex tokens,
// base62 keys): long, no underscore, letters and digits mixed. Real
// variable names of that length are written in UPPER_SNAKE_CASE.
func looksLikeKey(s string) bool {
	if len(s) < 24 || strings.Contains(s, "_") {
		return false
	}
	digit := strings.ContainsAny(s, "0123456789")
	letter := strings.IndexFunc(s, func(r rune) bool { return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' }) >= 0
	return digit && letter
}

// isToken reports whether s is an HTTP field name (RFC 9110 token).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// validFieldValue reports whether s may be sent as an HTTP field value: no
// CR, LF, NUL or other control bytes (a tab is allowed), which would split
// or corrupt the request.
func validFieldValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// hideValue keeps a --set or --var position from echoing the value the
// user typed, for values that may be secrets.
func hideValue(p Pos) Pos {
	if name, _, ok := strings.Cut(p.Set, "="); ok {
		p.Set = name + "=…"
	}
	return p
}

// ErrNoCertificate is returned for a ca_file without a PEM certificate.
var ErrNoCertificate = errors.New("holds no PEM certificate")

// checkCAFile is what the TLS setup will need: a readable file with at
// least one PEM CERTIFICATE block that parses. Checked at load, so a wrong
// file fails before anything is sent rather than as a handshake error.
//
// A ca_file is relative to the working directory, as the TLS setup reads
// it, and may lie anywhere (system bundles live under /etc/ssl): it is
// held to a regular file and a cap, and never quoted.
func checkCAFile(path string) error {
	data, err := safefile.ReadAll(path, safefile.Rules{Limit: safefile.MaxCAFileBytes, What: "CA file"})
	if err != nil {
		return err
	}
	n := 0
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return fmt.Errorf("%s: certificate %d does not parse: %w", path, n+1, err)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("%s %w (want one or more -----BEGIN CERTIFICATE----- blocks)", path, ErrNoCertificate)
	}
	return nil
}
