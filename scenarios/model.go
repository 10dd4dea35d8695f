package scenarios

import (
	"reflect"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/tollgate-dev/tollgate/report"
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

// Target kinds: the report's names, spelt once.
const (
	KindSeam     = report.TargetSeam
	KindOpenAI   = report.TargetOpenAI
	KindEmbedded = report.TargetEmbedded
)

// Phase kinds: the report's names, spelt once.
const (
	PhaseLoad        = report.KindLoad
	PhaseWarmup      = report.KindWarmup
	PhasePrefill     = report.KindPrefill
	PhaseDecode      = report.KindDecode
	PhasePrefixCache = report.KindPrefixCache
	PhaseRequests    = report.KindRequests
)

// Conversation phase kinds (sessions.go).
const (
	PhaseSessions = report.KindSessions
	PhaseAgent    = report.KindAgent
)

// document is the YAML file as written, before matrix expansion.
type document struct {
	Meta
	Schema string `yaml:"$schema"`
	// Include and Profiles are resolved before decoding; declared so the
	// keys are known (and so a profile may not smuggle them back in).
	Include  any `yaml:"include"`
	Profiles any `yaml:"profiles"`
	// ReplaceGates is read with include and profiles: true makes this
	// file's gates replace the included ones instead of adding to them.
	ReplaceGates any            `yaml:"replace_gates"`
	Name         string         `yaml:"name"`
	Description  string         `yaml:"description"`
	Vars         map[string]any `yaml:"vars"`
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
	// OpenAI is set for kind openai and kind embedded.
	OpenAI *OpenAITarget
}

// Embedded reports whether the target is served by tollgate's own simulator:
// kind embedded, or kind openai with no base_url (or base_url: embedded).
func (t *Target) Embedded() bool {
	return t.Kind == KindEmbedded || (t.OpenAI != nil && (t.OpenAI.BaseURL == "" || t.OpenAI.BaseURL == "embedded"))
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
	if kindNode == nil && d.keysOnly {
		// A profile may override a target without restating its kind:
		// its keys are fine if either kind knows them all.
		var best *errs
		for _, v := range []any{&OpenAITarget{}, &SeamTarget{}} {
			try := &errs{}
			sub := *d
			sub.errs = try
			sub.decode(n, reflectValue(v), path)
			if best == nil || len(try.list) < len(best.list) {
				best = try
			}
		}
		d.errs.list = append(d.errs.list, best.list...)
		return
	}
	if kindNode == nil {
		d.errorf(n, "%s: missing kind (one of %s)", path, strings.Join(targetKinds(), ", "))
		return
	}
	t.Kind = kindNode.Value
	_, live := liveKind(t.Kind)
	switch {
	case t.Kind == KindSeam:
		t.Seam = &SeamTarget{}
		d.decode(n, reflect.ValueOf(t.Seam).Elem(), path)
		t.Meta = t.Seam.Meta
	case live:
		t.OpenAI = &OpenAITarget{}
		d.decode(n, reflect.ValueOf(t.OpenAI).Elem(), path)
		t.Meta = t.OpenAI.Meta
	default:
		kinds := targetKinds()
		d.errorf(kindNode, "%s.kind: unknown target kind %q (one of %s)%s", path, t.Kind, strings.Join(kinds, ", "), suggest(t.Kind, kinds))
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
	// Faults make the seam misbehave on purpose, to prove gates catch it.
	Faults *SeamFaults `yaml:"faults" json:"faults,omitempty"`
	// Endpoint, when set, captures the seam on a live server instead of
	// simulating it: every transfer of the route session is a real request.
	Endpoint *SeamEndpoint `yaml:"endpoint" json:"endpoint,omitempty"`
}

// Live reports whether the seam is captured on a live endpoint.
func (s *SeamTarget) Live() bool { return s != nil && s.Endpoint != nil }

// DefaultSessionHeader carries the route session on a live seam.
const DefaultSessionHeader = "X-Meshnet-Session"

// DefaultSeamPrompt is the route session's prompt on a live seam.
const DefaultSeamPrompt = "Route Session profiling prompt."

// SeamEndpoint is the live server a seam is captured on: the client stands
// in for the head node and the endpoint for the tail. Each transfer is one
// streamed /v1/completions request with max_tokens 1.
type SeamEndpoint struct {
	Meta `json:"-"`
	// BaseURL is the server root; empty or "embedded" starts the embedded simulator.
	BaseURL string `yaml:"base_url" json:"base_url,omitempty"`
	// Model defaults to the first id from /v1/models.
	Model string `yaml:"model" json:"model,omitempty"`
	// APIKeyEnv names the environment variable holding the API key (never the key itself).
	APIKeyEnv string `yaml:"api_key_env" json:"api_key_env,omitempty"`
	// Headers are sent with every transfer.
	Headers map[string]string `yaml:"headers" json:"headers,omitempty"`
	// SecretHeaders are redacted wherever headers are shown.
	SecretHeaders []string `yaml:"secret_headers" json:"secret_headers,omitempty"`
	// SessionHeader carries session_id on every transfer and is read back
	// from every response (default X-Meshnet-Session).
	SessionHeader string `yaml:"session_header" json:"session_header"`
	// Prompt is the route session's prompt (the prefill transfer's text).
	Prompt string `yaml:"prompt" json:"prompt"`
	// Body is merged into every request body; a key set to null removes a default.
	Body map[string]any `yaml:"body" json:"body,omitempty"`
	// Timeout bounds one transfer (default 60s).
	Timeout Duration `yaml:"timeout" json:"timeout"`
	// ReadyTimeout bounds the wait for /health (else /v1/models) before the session.
	ReadyTimeout Duration `yaml:"ready_timeout" json:"ready_timeout"`
	// Sim configures the embedded simulator (base_url empty or embedded).
	Sim *SimConfig `yaml:"sim" json:"sim,omitempty"`
	// TLS serves the embedded simulator over TLS (a certificate made for
	// the run), so every connection opened costs a TLS handshake.
	TLS bool `yaml:"tls" json:"tls,omitempty"`
}

// Embedded reports whether the endpoint is tollgate's own simulator.
func (e *SeamEndpoint) Embedded() bool { return e.BaseURL == "" || e.BaseURL == "embedded" }

// SeamFaults are the ways a stub seam can misbehave on demand.
type SeamFaults struct {
	Meta `json:"-"`
	// LeakConnections is how many of the first connections the route
	// session opens are never closed, neither after a stateless transfer
	// nor at shutdown, so a cleanup gate must catch them.
	LeakConnections int `yaml:"leak_connections" json:"leak_connections"`
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

// OpenAITarget is a live OpenAI-compatible server (kind openai), or the
// embedded simulator (kind embedded, or openai without a base_url).
type OpenAITarget struct {
	Meta         `json:"-"`
	TargetCommon `yaml:",inline"`
	// BaseURL is the server root; empty or "embedded" starts the embedded simulator.
	BaseURL string `yaml:"base_url" json:"base_url,omitempty"`
	// Model defaults to the first id from /v1/models.
	Model string `yaml:"model" json:"model,omitempty"`
	// APIKeyEnv names the environment variable holding the API key (never the key itself).
	APIKeyEnv string `yaml:"api_key_env" json:"api_key_env,omitempty"`
	// Headers are sent with every request, e.g. a session header.
	Headers map[string]string `yaml:"headers" json:"headers,omitempty"`
	// SecretHeaders are redacted wherever headers are shown (Authorization and API-key headers always are).
	SecretHeaders []string `yaml:"secret_headers" json:"secret_headers,omitempty"`
	// Body is merged into every request body; a key set to null removes a default.
	Body     map[string]any `yaml:"body" json:"body,omitempty"`
	Endpoint string         `yaml:"endpoint" json:"endpoint"`
	Stream   *bool          `yaml:"stream" json:"stream"`
	Timeouts Timeouts       `yaml:"timeouts" json:"timeouts"`
	CAFile   string         `yaml:"ca_file" json:"ca_file,omitempty"`
	// ReadyTimeout bounds the wait for /health (else /v1/models) before the first phase.
	ReadyTimeout Duration `yaml:"ready_timeout" json:"ready_timeout"`
	// Metadata collects /health, /v1/models, /v1/cache/status, /v1/stats and /version.
	Metadata *bool `yaml:"metadata" json:"metadata"`
	// Metrics scrapes Prometheus /metrics before and after every phase.
	Metrics *bool `yaml:"metrics" json:"metrics"`
	// Sim configures the embedded simulator.
	Sim *SimConfig `yaml:"sim" json:"sim,omitempty"`
	// Retries retries 429 and 503 answers (off by default).
	Retries Retries `yaml:"retries" json:"retries"`
	// MaxLineBytes caps one SSE line, so memory stays bounded whatever the server sends.
	MaxLineBytes Size `yaml:"max_line_bytes" json:"max_line_bytes,omitempty"`
	// ArrivalClock is kernel (receive timestamps, the default on Linux) or read.
	ArrivalClock string `yaml:"arrival_clock" json:"arrival_clock,omitempty"`
	// FollowRedirects is never (the default: a 3xx is a redirect error) or
	// same_origin (307/308 to the same scheme, host and port are followed).
	FollowRedirects string `yaml:"follow_redirects" json:"follow_redirects,omitempty"`
}

// Retries of 429 and 503 answers: exponential backoff from Backoff, capped
// at MaxBackoff, never shorter than the server's Retry-After. Retried
// attempts are counted apart and never enter latency.
type Retries struct {
	Meta       `json:"-"`
	Max        int      `yaml:"max" json:"max"`
	Backoff    Duration `yaml:"backoff" json:"backoff"`
	MaxBackoff Duration `yaml:"max_backoff" json:"max_backoff"`
}

// FaultSpec is a fault the embedded simulator injects (see engine/sim).
type FaultSpec struct {
	Meta            `json:"-"`
	Kind            string   `yaml:"kind" json:"kind"`
	Probability     float64  `yaml:"probability" json:"probability,omitempty"`
	EveryNth        int      `yaml:"every_nth" json:"every_nth,omitempty"`
	RetryAfter      Duration `yaml:"retry_after" json:"retry_after"`
	Stall           Duration `yaml:"stall" json:"stall"`
	TrickleInterval Duration `yaml:"trickle_interval" json:"trickle_interval"`
	AfterTokens     int      `yaml:"after_tokens" json:"after_tokens,omitempty"`
}

// Timeouts of one request; zero means none (connect defaults to 10s).
type Timeouts struct {
	Meta       `json:"-"`
	Connect    Duration `yaml:"connect" json:"connect"`
	FirstToken Duration `yaml:"first_token" json:"first_token"`
	Idle       Duration `yaml:"idle" json:"idle"`
	Total      Duration `yaml:"total" json:"total"`
}

// SimConfig is the embedded simulator's latency model and cache. Zero fields
// keep the simulator's defaults.
type SimConfig struct {
	Meta                `json:"-"`
	Model               string   `yaml:"model" json:"model,omitempty"`
	TTFTBase            Duration `yaml:"ttft_base" json:"ttft_base"`
	PrefillTokensPerS   float64  `yaml:"prefill_tokens_per_s" json:"prefill_tokens_per_s,omitempty"`
	DecodeStep          Duration `yaml:"decode_step" json:"decode_step"`
	DecodeStepPerSeq    Duration `yaml:"decode_step_per_seq" json:"decode_step_per_seq"`
	MaxRunningSeqs      int      `yaml:"max_running_seqs" json:"max_running_seqs,omitempty"`
	CacheCapacityTokens int      `yaml:"cache_capacity_tokens" json:"cache_capacity_tokens,omitempty"`
	BlockTokens         int      `yaml:"block_tokens" json:"block_tokens,omitempty"`
	DisablePrefixCache  bool     `yaml:"disable_prefix_cache" json:"disable_prefix_cache,omitempty"`
	MaxModelLen         int      `yaml:"max_model_len" json:"max_model_len,omitempty"`
	DefaultMaxTokens    int      `yaml:"default_max_tokens" json:"default_max_tokens,omitempty"`
	Seed                int64    `yaml:"seed" json:"seed,omitempty"`
	// Faults are injected on demand, to test how the client and gates cope.
	Faults []FaultSpec `yaml:"faults" json:"faults,omitempty"`
	// ReasoningTokens makes the simulator a reasoning model (0: none).
	ReasoningTokens int `yaml:"reasoning_tokens" json:"reasoning_tokens,omitempty"`
	// ToolCalls: how the simulator answers requests that offer tools (sessions.go).
	ToolCalls *SimToolCalls `yaml:"tool_calls" json:"tool_calls,omitempty"`
}

// IntList is one integer or a list of them (prompt_tokens: 512 or [512, 1024]).
type IntList []int

func (x *IntList) decodeNode(d *decoder, n *yaml.Node, path string) {
	if n.Kind == yaml.ScalarNode {
		if i, ok := d.intValue(n, path); ok {
			*x = IntList{int(i)}
		}
		return
	}
	var list []int
	d.decode(n, reflect.ValueOf(&list).Elem(), path)
	*x = list
}

// RequestSpec is one fixed request of a requests phase.
type RequestSpec struct {
	Meta      `json:"-"`
	Messages  []MessageSpec  `yaml:"messages" json:"messages,omitempty"`
	Prompt    string         `yaml:"prompt" json:"prompt,omitempty"`
	MaxTokens int            `yaml:"max_tokens" json:"max_tokens,omitempty"`
	Body      map[string]any `yaml:"body" json:"body,omitempty"`
}

// MessageSpec is one chat message.
type MessageSpec struct {
	Meta    `json:"-"`
	Role    string `yaml:"role" json:"role"`
	Content string `yaml:"content" json:"content"`
}

// Requests is a count (warmup: requests: 2) or a list of fixed requests
// (requests phase).
type Requests struct {
	Count int
	List  []*RequestSpec
}

func (x *Requests) decodeNode(d *decoder, n *yaml.Node, path string) {
	if n.Kind == yaml.ScalarNode {
		if i, ok := d.intValue(n, path); ok {
			x.Count = int(i)
		}
		return
	}
	d.decode(n, reflect.ValueOf(&x.List).Elem(), path)
	x.Count = len(x.List)
}

// PromptSpec says where prompts come from: synthetic (the default, seeded and
// calibrated to prompt_tokens through the server's tokenizer), fixed text, or
// a JSONL file of {"messages": [...]} or {"prompt": "..."} lines.
type PromptSpec struct {
	Meta `json:"-"`
	Text string `yaml:"text" json:"text,omitempty"`
	File string `yaml:"file" json:"file,omitempty"`
	// Calibrate turns the tokenizer search off when false (word-count estimate only).
	Calibrate *bool `yaml:"calibrate" json:"calibrate,omitempty"`
	// Dataset is a ShareGPT or JSONL file sampled for prompts (dataset.go).
	Dataset         string `yaml:"dataset" json:"dataset,omitempty"`
	Format          string `yaml:"format" json:"format,omitempty"`
	Replacement     *bool  `yaml:"replacement" json:"replacement,omitempty"`
	MinPromptTokens int    `yaml:"min_prompt_tokens" json:"min_prompt_tokens,omitempty"`
	MaxPromptTokens int    `yaml:"max_prompt_tokens" json:"max_prompt_tokens,omitempty"`
	MinOutputTokens int    `yaml:"min_output_tokens" json:"min_output_tokens,omitempty"`
	MaxOutputTokens int    `yaml:"max_output_tokens" json:"max_output_tokens,omitempty"`
}

// Phase is one step of a run. Which keys apply depends on the kind and on
// the target kind; see phaseKindTable (kinds.go).
type Phase struct {
	Meta        `json:"-"`
	Name        string `json:"name"`
	Kind        string `yaml:"kind" json:"kind"`
	Description string `yaml:"description" json:"description,omitempty"`
	// Tokens caps the decode transfers of a seam phase (default: every output token).
	Tokens int `yaml:"tokens" json:"tokens,omitempty"`

	// Live targets.
	Requests     Requests   `yaml:"requests" json:"-"`
	Repeat       int        `yaml:"repeat" json:"repeat,omitempty"`
	PromptTokens IntList    `yaml:"prompt_tokens" json:"prompt_tokens,omitempty"`
	MaxTokens    int        `yaml:"max_tokens" json:"max_tokens,omitempty"`
	SuffixTokens int        `yaml:"suffix_tokens" json:"suffix_tokens,omitempty"`
	Prompt       PromptSpec `yaml:"prompt" json:"prompt"`
	Seed         int64      `yaml:"seed" json:"seed,omitempty"`
	MaxErrorRate *float64   `yaml:"max_error_rate" json:"max_error_rate,omitempty"`
	// FilePrompts holds the requests read from prompt.file at load time.
	FilePrompts []*RequestSpec `yaml:"-" json:"-"`
	// Dataset is what prompt.dataset held (dataset.go).
	Dataset *DatasetInfo `yaml:"-" json:"-"`

	// Load phases.
	Concurrency int      `yaml:"concurrency" json:"concurrency,omitempty"`
	Rate        float64  `yaml:"rate" json:"rate,omitempty"`
	Arrival     string   `yaml:"arrival" json:"arrival,omitempty"`
	Burstiness  float64  `yaml:"burstiness" json:"burstiness,omitempty"`
	Duration    Duration `yaml:"duration" json:"duration"`
	RampUp      Duration `yaml:"ramp_up" json:"ramp_up"`
	MaxInFlight int      `yaml:"max_in_flight" json:"max_in_flight,omitempty"`
	// MaxDispatchLag bounds the client's own lateness (dispatch_lag_ms.p99)
	// at an open-loop point; nil: the default rule (live.DispatchLagBound).
	MaxDispatchLag *Duration    `yaml:"max_dispatch_lag" json:"max_dispatch_lag,omitempty"`
	Sweep          Sweep        `yaml:"sweep" json:"sweep"`
	SLO            SLO          `yaml:"slo" json:"slo,omitempty"`
	Shared         SharedPrefix `yaml:"shared_prefix" json:"shared_prefix"`
	// StopWhenSaturated ends a sweep after its first saturated point.
	StopWhenSaturated bool `yaml:"stop_when_saturated" json:"stop_when_saturated,omitempty"`
	// PromptDist and MaxTokensDist are set when prompt_tokens or max_tokens
	// is a distribution rather than a number (load phases).
	PromptDist    *Dist `yaml:"-" json:"prompt_dist,omitempty"`
	MaxTokensDist *Dist `yaml:"-" json:"max_tokens_dist,omitempty"`

	// The keys of kinds that declare them beside their row (kinds.go).
	KindFields `yaml:",inline"`
}

// Dist is a seeded distribution of token counts.
type Dist struct {
	Meta         `json:"-"`
	Distribution string  `yaml:"distribution" json:"distribution"`
	Min          int     `yaml:"min" json:"min,omitempty"`
	Max          int     `yaml:"max" json:"max,omitempty"`
	Mean         float64 `yaml:"mean" json:"mean,omitempty"`
	StdDev       float64 `yaml:"stddev" json:"stddev,omitempty"`
}

// Sweep runs a load phase once per point: a list of concurrencies or of rates.
type Sweep struct {
	Meta        `json:"-"`
	Concurrency []int     `yaml:"concurrency" json:"concurrency,omitempty"`
	Rate        []float64 `yaml:"rate" json:"rate,omitempty"`
}

// SLO maps a per-request metric to its limit, e.g. {ttft_ms: 500, tpot_ms: 50}.
type SLO struct {
	Meta   `json:"-"`
	Limits map[string]float64 `json:"limits,omitempty"`
	Order  []string           `json:"-"`
}

// SLOMetrics are the per-request metrics an SLO may bound (all "lower is better").
var SLOMetrics = []string{"ttft_ms", "tpot_ms", "e2e_ms", "ttfb_ms", "itl_max_ms"}

func (x *SLO) decodeNode(d *decoder, n *yaml.Node, path string) {
	if n.Kind != yaml.MappingNode {
		if n.ShortTag() != "!!null" {
			d.errorf(n, "%s: expected a mapping such as {ttft_ms: 500, tpot_ms: 50}, got %s", path, describe(n))
		}
		return
	}
	x.Pos = d.pos(n)
	x.Limits = map[string]float64{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !oneOf(k.Value, SLOMetrics) {
			d.errorf(k, "%s: no per-request metric %q to bound (one of %s)%s", path, k.Value, strings.Join(SLOMetrics, ", "), suggest(k.Value, SLOMetrics))
			continue
		}
		f, ok := d.floatValue(v, path+"."+k.Value)
		if !ok {
			continue
		}
		if f <= 0 {
			d.errorf(v, "%s.%s: must be positive, got %v", path, k.Value, f)
			continue
		}
		x.Limits[k.Value] = f
		x.Order = append(x.Order, k.Value)
	}
}

// SharedPrefix makes requests share prompt prefixes: request i belongs to
// group i mod Groups, whose prompts all start with the same PrefixTokens.
type SharedPrefix struct {
	Meta         `json:"-"`
	Groups       int `yaml:"groups" json:"groups,omitempty"`
	PrefixTokens int `yaml:"prefix_tokens" json:"prefix_tokens,omitempty"`
}

func (p *Phase) decodeNode(d *decoder, n *yaml.Node, path string) {
	type plain Phase // drops this method so decoding does not recurse
	if n.Kind != yaml.MappingNode {
		d.decodeStruct(n, reflect.ValueOf((*plain)(p)).Elem(), path)
		return
	}
	// A prompt_tokens or max_tokens given as a mapping is a distribution:
	// decode it aside, and the rest of the phase as usual.
	rest := *n
	rest.Content = nil
	dists := map[string]**Dist{"prompt_tokens": &p.PromptDist, "max_tokens": &p.MaxTokensDist}
	var distKeys [][2]*yaml.Node
	known, all, _ := fields(reflect.TypeFor[plain]())
	hints := phaseKeyHints(p.Name, mapValue(n, "kind"), all)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolveAlias(n.Content[i+1])
		if _, ok := known[k.Value]; !ok {
			// Said here, with the keys of the phase's kind to suggest
			// from: a decode phase's typo is not one of a load phase's keys.
			d.errs.add(d.pos(k), "%s: unknown field %q%s", path, k.Value, suggest(k.Value, hints))
			continue
		}
		if dst, ok := dists[k.Value]; ok && v.Kind == yaml.MappingNode {
			*dst = &Dist{}
			d.decode(v, reflect.ValueOf(*dst).Elem(), path+"."+k.Value)
			distKeys = append(distKeys, [2]*yaml.Node{k, v})
			continue
		}
		rest.Content = append(rest.Content, n.Content[i], n.Content[i+1])
	}
	d.decodeStruct(&rest, reflect.ValueOf((*plain)(p)).Elem(), path)
	for _, kv := range distKeys {
		p.Keys[kv[0].Value] = d.pos(kv[0])
		p.Values[kv[0].Value] = d.pos(kv[1])
	}
}

// phaseKeyHints are the keys an unknown key of a phase is suggested from:
// those of its kind (written, or its name) on any target, else every
// phase key.
func phaseKeyHints(name string, kindNode *yaml.Node, all []string) []string {
	kind := name
	if kindNode = resolveAlias(kindNode); kindNode != nil && kindNode.Kind == yaml.ScalarNode {
		kind = kindNode.Value
	}
	if k, ok := kindOf(kind); ok {
		return append(append([]string{}, k.keys...), k.seamKeys...)
	}
	return all
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
	// SHA256 is the hash of the scenario's identity: the effective scenario
	// (after includes, profile, vars and --set) without its gates,
	// descriptions, vars block and target addresses: what is measured.
	SHA256 string
	// Identity is the hash of each field of the identity document, by
	// path (phases.decode.max_tokens), so two identities that differ can
	// say where.
	Identity map[string]string
	// Warnings are what the loader changed or will not do as written, each
	// with its position (a sim block dropped for a --set base_url).
	Warnings []string
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
	g.Pos = d.pos(n)
	d.decodeStruct(n, reflect.ValueOf((*plain)(g)).Elem(), path)
	if en := mapValue(n, "expr"); en != nil {
		g.ExprPos = d.pos(en)
		g.ExprBlock = en.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0
		g.ExprQuoted = en.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0
	}
}
