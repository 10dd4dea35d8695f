package scenarios

import (
	"go.yaml.in/yaml/v3"

	"github.com/tollgate-dev/tollgate/internal/redact"
)

// Printable returns the effective scenario (includes, profile, vars and
// --set applied) as YAML, with the values of secret headers and of vars
// whose names look secret replaced by [REDACTED], and so is every other
// place those values were interpolated into and every URL password.
func (sc *Scenario) Printable() []byte {
	var doc yaml.Node
	if err := yaml.Unmarshal(sc.Effective, &doc); err != nil || len(doc.Content) == 0 {
		return sc.Effective
	}
	root := doc.Content[0]
	var secrets []string
	if vars := mapValue(root, "vars"); vars != nil && vars.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(vars.Content); i += 2 {
			if v := vars.Content[i+1]; redact.IsSecretName(vars.Content[i].Value) && v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str" {
				secrets = append(secrets, v.Value)
				redactNode(v)
			}
		}
	}
	if targets := mapValue(root, "targets"); targets != nil && targets.Kind == yaml.MappingNode {
		var holders []*yaml.Node // targets, and a live seam's endpoint
		for i := 1; i < len(targets.Content); i += 2 {
			holders = append(holders, targets.Content[i])
			if ep := mapValue(targets.Content[i], "endpoint"); ep != nil && ep.Kind == yaml.MappingNode {
				holders = append(holders, ep)
			}
		}
		for _, t := range holders {
			headers := mapValue(t, "headers")
			if headers == nil || headers.Kind != yaml.MappingNode {
				continue
			}
			var extra []string
			if sh := mapValue(t, "secret_headers"); sh != nil {
				for _, n := range sh.Content {
					extra = append(extra, n.Value)
				}
			}
			for j := 0; j+1 < len(headers.Content); j += 2 {
				if redact.IsSecretHeader(headers.Content[j].Value, extra) {
					secrets = append(secrets, headers.Content[j+1].Value)
					redactNode(headers.Content[j+1])
				}
			}
		}
	}
	scrub(root, redact.New(secrets...))
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return sc.Effective
	}
	return out
}

// scrub removes known secrets and URL passwords from every scalar, so a
// secret var interpolated into a body field or a base_url with a password
// is not printed either.
func scrub(n *yaml.Node, r *redact.Redactor) {
	if n.Kind == yaml.ScalarNode {
		if v := r.String(n.Value); v != n.Value {
			redactNode(n)
			n.Value = v
		}
		return
	}
	for _, c := range n.Content {
		scrub(c, r)
	}
}

func redactNode(n *yaml.Node) {
	n.Kind, n.Tag, n.Value, n.Style, n.Content = yaml.ScalarNode, "!!str", redact.Value, 0, nil
}
