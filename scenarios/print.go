package scenarios

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// Redacted replaces secret values wherever a scenario is shown.
const Redacted = "[REDACTED]"

// alwaysSecretHeaders are redacted whatever secret_headers says.
var alwaysSecretHeaders = []string{"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie"}

// secretWords mark a var whose value is probably a secret.
var secretWords = []string{"key", "apikey", "token", "secret", "password", "passwd", "credential", "credentials", "auth"}

// Printable returns the effective scenario (includes, profile, vars and
// --set applied) as YAML, with the values of secret headers and of vars
// whose names look secret replaced by [REDACTED].
func (sc *Scenario) Printable() []byte {
	var doc yaml.Node
	if err := yaml.Unmarshal(sc.Effective, &doc); err != nil || len(doc.Content) == 0 {
		return sc.Effective
	}
	root := doc.Content[0]
	if vars := mapValue(root, "vars"); vars != nil && vars.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(vars.Content); i += 2 {
			if v := vars.Content[i+1]; looksSecret(vars.Content[i].Value) && v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str" {
				redact(vars.Content[i+1])
			}
		}
	}
	if targets := mapValue(root, "targets"); targets != nil && targets.Kind == yaml.MappingNode {
		for i := 1; i < len(targets.Content); i += 2 {
			t := targets.Content[i]
			headers := mapValue(t, "headers")
			if headers == nil || headers.Kind != yaml.MappingNode {
				continue
			}
			secret := append([]string{}, alwaysSecretHeaders...)
			if sh := mapValue(t, "secret_headers"); sh != nil {
				for _, n := range sh.Content {
					secret = append(secret, n.Value)
				}
			}
			for j := 0; j+1 < len(headers.Content); j += 2 {
				for _, s := range secret {
					if strings.EqualFold(headers.Content[j].Value, s) {
						redact(headers.Content[j+1])
					}
				}
			}
		}
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return sc.Effective
	}
	return out
}

func redact(n *yaml.Node) {
	n.Kind, n.Tag, n.Value, n.Style, n.Content = yaml.ScalarNode, "!!str", Redacted, 0, nil
}

// looksSecret matches whole words of a var name (api_key, auth-token), so
// min_decode_tokens_per_s stays visible.
func looksSecret(name string) bool {
	l := strings.ToLower(name)
	if strings.HasSuffix(l, "_env") {
		return false // the name of a variable, not its value
	}
	for _, part := range strings.FieldsFunc(l, func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
		for _, w := range secretWords {
			if part == w {
				return true
			}
		}
	}
	return false
}
