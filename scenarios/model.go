package scenarios

import (
	"reflect"
	"sort"

	"go.yaml.in/yaml/v3"
)

func reflectValue(p any) reflect.Value { return reflect.ValueOf(p).Elem() }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Target kinds.
const (
	KindSeam     = "seam"
	KindOpenAI   = "openai"
	KindEmbedded = "embedded"
)

// Phase kinds.
const (
	PhasePrefill = "prefill"
	PhaseDecode  = "decode"
)

// document is the YAML file as written, before matrix expansion.
type document struct {
	Meta
	Schema      string         `yaml:"$schema"`
	Name        string         `yaml:"name"`
	Description string         `yaml:"description"`
	Vars        map[string]any `yaml:"vars"`
	// Matrix is read from the node tree before expansion; declared here so the key is known.
	Matrix  any           `yaml:"matrix"`
	Targets []*Target     `yaml:"targets,keyed"`
	Phases  []*Phase      `yaml:"phases,keyed"`
	Gates   []*Gate       `yaml:"gates"`
	Report  ReportOptions `yaml:"report"`
}

// ReportOptions says what goes into the report beyond the aggregates.
type ReportOptions struct {
	Meta
	// Samples keeps every per-request (or per-transfer) sample in the report.
	Samples *bool `yaml:"samples"`
}

// Target is one thing to measure. Exactly one of the kind-specific fields is set.
type Target struct {
	Meta
	Name string
	Kind string
	Seam *SeamTarget
}

// TargetCommon holds the keys every target kind accepts.
type TargetCommon struct {
	Kind        string `yaml:"kind" json:"kind"`
	Description string `yaml:"description" json:"description,omitempty"`
}

func (t *Target) decodeNode(d *decoder, n *yaml.Node, path string) {
	if n.Kind != yaml.MappingNode {
		d.errorf(n, "%s: expected a mapping with a kind, got %s", path, describe(n))
		return
	}
	t.Pos = d.pos(n)
	var kindNode *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "kind" {
			kindNode = resolveAlias(n.Content[i+1])
		}
	}
	if kindNode == nil {
		d.errorf(n, "%s: missing kind (one of %s, %s, %s)", path, KindSeam, KindOpenAI, KindEmbedded)
		return
	}
	t.Kind = kindNode.Value
	switch t.Kind {
	case KindSeam:
		t.Seam = &SeamTarget{}
		d.decode(n, reflect.ValueOf(t.Seam).Elem(), path)
		t.Meta = t.Seam.Meta
	default:
		d.errorf(kindNode, "%s.kind: unknown target kind %q (one of %s)%s", path, t.Kind, KindSeam,
			suggest(t.Kind, []string{KindSeam, KindOpenAI, KindEmbedded}))
	}
}

// SeamTarget is a stub seam: a simulated transport between the nodes of a
// split-model route, run in virtual time.
type SeamTarget struct {
	Meta         `json:"-"`
	TargetCommon `yaml:",inline"`
	// Route lists the nodes; each adjacent pair is one seam.
	Route           []string    `yaml:"route" json:"route"`
	Transport       string      `yaml:"transport" json:"transport"`
	Cache           string      `yaml:"cache" json:"cache"`
	ActivationBytes Size        `yaml:"activation_bytes" json:"activation_bytes"`
	Compression     Compression `yaml:"compression" json:"compression"`
	OutputTokens    []string    `yaml:"output_tokens" json:"output_tokens"`
	SessionID       string      `yaml:"session_id" json:"session_id"`
	Costs           SeamCosts   `yaml:"costs" json:"costs"`
}

// Compression is applied to the real activation bytes.
type Compression struct {
	Meta      `json:"-"`
	Algorithm string `yaml:"algorithm" json:"algorithm"`
	Level     *int   `yaml:"level" json:"level,omitempty"`
}

// SeamCosts are the cost components of one transfer over one seam, in
// milliseconds of virtual time.
type SeamCosts struct {
	Meta              `json:"-"`
	ModelMS           PerPhase     `yaml:"model_ms" json:"model_ms"`
	EncodeMS          PerPhase     `yaml:"encode_ms" json:"encode_ms"`
	FramingMS         PerPhase     `yaml:"framing_ms" json:"framing_ms"`
	MetadataMS        PerPhase     `yaml:"metadata_ms" json:"metadata_ms"`
	CopyAllocationMS  PerPhase     `yaml:"copy_allocation_ms" json:"copy_allocation_ms"`
	CompressionMS     PerPhase     `yaml:"compression_ms" json:"compression_ms"`
	DecompressionMS   PerPhase     `yaml:"decompression_ms" json:"decompression_ms"`
	ConnectionSetupMS PerMode      `yaml:"connection_setup_ms" json:"connection_setup_ms"`
	QueueWaitMS       PerModeQueue `yaml:"queue_wait_ms" json:"queue_wait_ms"`
	TransportMS       PerMode      `yaml:"transport_ms" json:"transport_ms"`
	// LinkBytesPerS adds wire_bytes / throughput to the transport time; 0 means no per-byte cost.
	LinkBytesPerS float64 `yaml:"link_bytes_per_s" json:"link_bytes_per_s"`
}

// Phase is one step of a run. Which keys apply depends on the kind and on
// the target kind; see checkPhase.
type Phase struct {
	Meta        `json:"-"`
	Name        string `json:"name"`
	Kind        string `yaml:"kind" json:"kind"`
	Description string `yaml:"description" json:"description,omitempty"`
	// Tokens caps the decode transfers of a seam phase (default: every output token).
	Tokens int `yaml:"tokens" json:"tokens,omitempty"`
}

// Gate is an expression over the report that must hold.
type Gate struct {
	Meta        `json:"-"`
	Name        string `yaml:"name" json:"name"`
	Expr        string `yaml:"expr" json:"expr"`
	Description string `yaml:"description" json:"description,omitempty"`
	Optional    bool   `yaml:"optional" json:"optional,omitempty"`
	// ExprPos is where the expression text starts, for compile errors.
	ExprPos Pos `yaml:"-" json:"-"`
	// ExprBlock is true when the expression is a YAML block scalar (| or >),
	// whose first line starts one line below ExprPos.
	ExprBlock bool `yaml:"-" json:"-"`
	// ExprIndent is the column (0-based) where a block expression's lines start.
	ExprIndent int `yaml:"-" json:"-"`
	// ExprQuoted is true when the expression is a quoted scalar.
	ExprQuoted bool `yaml:"-" json:"-"`
}

// Param is one matrix value of a run, in the order the matrix declares keys.
type Param struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Run is one expanded combination: a target with its matrix values applied.
type Run struct {
	Name   string
	Params []Param
	Target *Target
	Phases []*Phase
}

// Scenario is a loaded, interpolated, expanded and validated scenario file.
type Scenario struct {
	Name        string
	Description string
	File        string
	// SHA256 is the hash of the effective scenario (after --set and vars).
	SHA256 string
	// Effective is the effective scenario as YAML, before matrix expansion.
	Effective []byte
	Vars      map[string]any
	Matrix    []MatrixAxis
	Targets   []*Target // as declared, from the first expansion
	Phases    []*Phase  // as declared, from the first expansion
	Runs      []*Run
	Gates     []*Gate
	Samples   bool
}

// MatrixAxis is one key of the matrix with its values.
type MatrixAxis struct {
	Key    string
	Values []string
	Pos    Pos
}

func (g *Gate) decodeNode(d *decoder, n *yaml.Node, path string) {
	type plain Gate // drops this method so decoding does not recurse
	d.decodeStruct(n, reflect.ValueOf((*plain)(g)).Elem(), path)
	if en := mapValue(n, "expr"); en != nil {
		g.ExprPos = d.pos(en)
		g.ExprBlock = en.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0
		g.ExprQuoted = en.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0
	}
}
