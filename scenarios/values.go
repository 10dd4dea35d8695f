package scenarios

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

func (m *Meta) meta() *Meta { return m }

// Duration is a Go duration string in YAML ("500ms", "2m"); bare numbers are
// refused because a unitless duration is a bug waiting to happen.
type Duration struct{ time.Duration }

func (x *Duration) decodeNode(d *decoder, n *yaml.Node, path string) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		d.errorf(n, "%s: expected a duration such as 500ms or 2m, got %s", path, describe(n))
		return
	}
	if n.ShortTag() == "!!int" || n.ShortTag() == "!!float" {
		d.errorf(n, "%s: duration %s has no unit; write e.g. %sms or %ss", path, n.Value, n.Value, n.Value)
		return
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		d.errorf(n, "%s: %q is not a duration (use Go syntax such as 750ms, 30s, 1m30s)", path, n.Value)
		return
	}
	if v < 0 {
		d.errorf(n, "%s: duration %s is negative", path, n.Value)
		return
	}
	x.Duration = v
}

func (x Duration) MarshalJSON() ([]byte, error) { return []byte(strconv.Quote(x.String())), nil }

// Size is a byte count written as an integer or with a unit: 4096, 4KiB, 1MB.
type Size int64

var sizeRE = regexp.MustCompile(`^\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*$`)

var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30,
	"k": 1 << 10, "m": 1 << 20, "g": 1 << 30,
}

// ParseSize parses a size such as "4KiB" (1024-based) or "4KB" (1000-based).
func ParseSize(s string) (Size, error) {
	m := sizeRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q is not a size (write an integer or e.g. 4KiB, 1MB)", s)
	}
	unit, ok := sizeUnits[strings.ToLower(m[2])]
	if !ok {
		return 0, fmt.Errorf("%q has an unknown unit %q (use B, KB, MB, GB, KiB, MiB or GiB)", s, m[2])
	}
	f, _ := strconv.ParseFloat(m[1], 64)
	v := f * unit
	if v != float64(int64(v)) {
		return 0, fmt.Errorf("%q is not a whole number of bytes", s)
	}
	return Size(v), nil
}

func (x *Size) decodeNode(d *decoder, n *yaml.Node, path string) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" || n.ShortTag() == "!!bool" {
		d.errorf(n, "%s: expected a size such as 4096 or 4KiB, got %s", path, describe(n))
		return
	}
	v, err := ParseSize(n.Value)
	if err != nil {
		d.errorf(n, "%s: %v", path, err)
		return
	}
	*x = v
}

// PerPhase is a cost in milliseconds that is either one number for every
// phase or a mapping {prefill: x, decode: y}.
type PerPhase struct {
	Prefill float64 `json:"prefill"`
	Decode  float64 `json:"decode"`
}

// For returns the value for a phase kind.
func (x PerPhase) For(kind string) float64 {
	if kind == "prefill" {
		return x.Prefill
	}
	return x.Decode
}

func (x *PerPhase) decodeNode(d *decoder, n *yaml.Node, path string) {
	if n.Kind == yaml.ScalarNode {
		if f, ok := d.nonNegative(n, path); ok {
			x.Prefill, x.Decode = f, f
		}
		return
	}
	d.decodeKeyedNumbers(n, path, map[string]*float64{"prefill": &x.Prefill, "decode": &x.Decode})
}

// PerMode is a cost in milliseconds that is either one number for both
// transport modes or a mapping {direct: x, relay: y}.
type PerMode struct {
	Direct float64 `json:"direct"`
	Relay  float64 `json:"relay"`
}

// For returns the value for a transport mode.
func (x PerMode) For(mode string) float64 {
	if mode == "relay" {
		return x.Relay
	}
	return x.Direct
}

func (x *PerMode) decodeNode(d *decoder, n *yaml.Node, path string) {
	if n.Kind == yaml.ScalarNode {
		if f, ok := d.nonNegative(n, path); ok {
			x.Direct, x.Relay = f, f
		}
		return
	}
	d.decodeKeyedNumbers(n, path, map[string]*float64{"direct": &x.Direct, "relay": &x.Relay})
}

// QueueWait is the queue wait of one transport mode: a base plus a cycle
// indexed by decode token (token i adds cycle[i % len(cycle)]). The seed's
// relay alternation is {base: 0.18, cycle: [0, 0.05]}.
type QueueWait struct {
	Base  float64   `json:"base"`
	Cycle []float64 `json:"cycle,omitempty"`
}

// At returns the queue wait for a decode token index, or for prefill when index < 0.
func (x QueueWait) At(index int) float64 {
	if index < 0 || len(x.Cycle) == 0 {
		return x.Base
	}
	return x.Base + x.Cycle[index%len(x.Cycle)]
}

func (x *QueueWait) decodeNode(d *decoder, n *yaml.Node, path string) {
	if n.Kind == yaml.ScalarNode {
		if f, ok := d.nonNegative(n, path); ok {
			x.Base = f
		}
		return
	}
	if n.Kind != yaml.MappingNode {
		d.errorf(n, "%s: expected a number or {base, cycle}, got %s", path, describe(n))
		return
	}
	var raw struct {
		Base  float64   `yaml:"base"`
		Cycle []float64 `yaml:"cycle"`
	}
	d.decode(n, reflectValue(&raw), path)
	if raw.Base < 0 {
		d.errorf(n, "%s.base: must not be negative", path)
	}
	for i, c := range raw.Cycle {
		if raw.Base+c < 0 {
			d.errorf(n, "%s.cycle[%d]: base + cycle must not be negative", path, i)
		}
	}
	x.Base, x.Cycle = raw.Base, raw.Cycle
}

// PerModeQueue is a QueueWait for each transport mode, or one for both.
type PerModeQueue struct {
	Direct QueueWait `json:"direct"`
	Relay  QueueWait `json:"relay"`
}

// For returns the queue wait of a transport mode.
func (x PerModeQueue) For(mode string) QueueWait {
	if mode == "relay" {
		return x.Relay
	}
	return x.Direct
}

func (x *PerModeQueue) decodeNode(d *decoder, n *yaml.Node, path string) {
	if n.Kind == yaml.MappingNode && len(n.Content) > 0 {
		k := n.Content[0].Value
		if k == "direct" || k == "relay" {
			var raw struct {
				Direct QueueWait `yaml:"direct"`
				Relay  QueueWait `yaml:"relay"`
			}
			d.decode(n, reflectValue(&raw), path)
			x.Direct, x.Relay = raw.Direct, raw.Relay
			return
		}
	}
	var q QueueWait
	q.decodeNode(d, n, path)
	x.Direct, x.Relay = q, q
}

func (d *decoder) nonNegative(n *yaml.Node, path string) (float64, bool) {
	f, ok := d.floatValue(n, path)
	if ok && f < 0 {
		d.errorf(n, "%s: must not be negative, got %s", path, n.Value)
		return 0, false
	}
	return f, ok
}

func (d *decoder) decodeKeyedNumbers(n *yaml.Node, path string, dst map[string]*float64) {
	if n.Kind != yaml.MappingNode {
		keys := sortedKeys(dst)
		d.errorf(n, "%s: expected a number or a mapping with %s, got %s", path, strings.Join(keys, "/"), describe(n))
		return
	}
	seen := map[string]bool{}
	unknown := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p, ok := dst[k.Value]
		if !ok {
			unknown = true
			d.errorf(k, "%s: unknown key %q (expected %s)%s", path, k.Value, strings.Join(sortedKeys(dst), ", "), suggest(k.Value, sortedKeys(dst)))
			continue
		}
		seen[k.Value] = true
		if f, ok := d.nonNegative(v, path+"."+k.Value); ok {
			*p = f
		}
	}
	for _, k := range sortedKeys(dst) {
		if !seen[k] && !unknown {
			d.errorf(n, "%s: missing %q (give every key, or one number for all)", path, k)
		}
	}
}
