package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/tollgate-dev/tollgate/stats"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Server is one simulated LLM server. Create it with New; serve it with
// Start (own listener) or mount Handler() anywhere. Close stops both.
type Server struct {
	cfg       Config
	modelJSON []byte // JSON-encoded model name, spliced into pre-encoded chunks
	keepAlive string // the Keep-Alive header: the idle timeout in whole seconds; "" when under one
	sched     *scheduler
	cache     *prefixCache // nil when the prefix cache is disabled
	out       *outTable
	faults    *faultPlan
	reqLog    *requestLog // nil without Config.RequestLog
	detok     detokTable
	routes    map[string]map[string]http.HandlerFunc // path → method → handler
	done      chan struct{}
	startedAt time.Time

	mu        sync.Mutex // guards closed, srv, serveDone and handlers.Add
	closed    bool
	srv       *http.Server
	serveDone chan struct{}
	handlers  sync.WaitGroup
	closeOnce sync.Once
	closeErr  error

	nextID           atomic.Uint64
	requests         atomic.Int64
	succeededStop    atomic.Int64
	succeededLength  atomic.Int64
	aborted          atomic.Int64
	promptTokens     atomic.Int64
	cacheQueryTokens atomic.Int64
	cacheHitTokens   atomic.Int64
	ttft             histogram
	ttftExactMu      sync.Mutex
	ttftExact        *stats.Histogram
}

// Stats is a snapshot of the Server's counters.
type Stats struct {
	// ServerTTFTMS summarises, in ms, request arrival → first token written and
	// flushed, as the server saw it: the reference a client's TTFT error is
	// measured against (absent before the first token).
	ServerTTFTMS map[string]float64 `json:"server_ttft_ms,omitempty"`
	// Requests counts generation requests that passed validation.
	Requests int64 `json:"requests_total"`
	// Succeeded counts generation requests that produced every token.
	Succeeded int64 `json:"requests_succeeded_total"`
	// Aborted counts generation requests that ended early: the client went
	// away or the Server closed.
	Aborted int64 `json:"requests_aborted_total"`
	// Running is the number of requests holding a slot now (prefill or decode).
	Running int64 `json:"requests_running"`
	// Waiting is the number of requests queued for a slot now.
	Waiting int64 `json:"requests_waiting"`
	// PeakRunning is the highest Running seen since New.
	PeakRunning int64 `json:"peak_running"`
	// PromptTokens counts prompt tokens of admitted requests.
	PromptTokens int64 `json:"prompt_tokens_total"`
	// GenerationTokens counts generated tokens, first tokens included.
	GenerationTokens int64 `json:"generation_tokens_total"`
	// CacheQueryTokens counts prompt tokens looked up in the prefix cache.
	CacheQueryTokens int64 `json:"prefix_cache_query_tokens_total"`
	// CacheHitTokens counts prompt tokens served from the prefix cache.
	CacheHitTokens int64 `json:"prefix_cache_hit_tokens_total"`
	// CacheMissTokens is CacheQueryTokens − CacheHitTokens.
	CacheMissTokens int64 `json:"prefix_cache_miss_tokens_total"`
	// CacheUsedTokens is the number of tokens in cached blocks now.
	CacheUsedTokens int `json:"cache_used_tokens"`
	// CacheCapacityTokens is the cache capacity, in whole blocks' tokens.
	CacheCapacityTokens int `json:"cache_capacity_tokens"`
	// CacheBlocks is the number of cached blocks now.
	CacheBlocks int `json:"cache_blocks"`
	// CacheEvictedBlocks counts blocks evicted by capacity pressure.
	CacheEvictedBlocks int64 `json:"cache_evicted_blocks_total"`
	// FaultsInjected counts, per configured Fault kind, the responses a
	// fault changed; nil without faults. Requests a fault refused or cut
	// short count in Requests but in neither Succeeded nor Aborted.
	FaultsInjected map[string]int64 `json:"faults_injected,omitempty"`
}

// New validates cfg (zero fields take DefaultConfig's values) and returns a
// Server. It starts no goroutines.
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	modelJSON, err := json.Marshal(cfg.Model)
	if err != nil {
		return nil, fmt.Errorf("sim: encode model name: %w", err)
	}
	s := &Server{
		cfg:       cfg,
		modelJSON: modelJSON,
		out:       newOutTable(),
		done:      make(chan struct{}),
		startedAt: time.Now(),
		keepAlive: keepAliveHeader(cfg.IdleTimeout),
		ttft:      newHistogram(ttftBucketsS()),
		ttftExact: stats.New(),
	}
	s.faults = newFaultPlan(&s.cfg)
	s.reqLog = newRequestLog(cfg.RequestLog)
	s.sched = newScheduler(&s.cfg, s.done)
	if !cfg.DisablePrefixCache {
		s.cache = newPrefixCache(cfg.CacheCapacityTokens, cfg.BlockTokens)
	}
	s.routes = map[string]map[string]http.HandlerFunc{
		"/health":                   {http.MethodGet: s.handleHealth},
		"/version":                  {http.MethodGet: s.handleVersion},
		"/v1/models":                {http.MethodGet: s.handleModels},
		"/v1/chat/completions":      {http.MethodPost: s.handleGenerate(kindChat)},
		"/v1/completions":           {http.MethodPost: s.handleGenerate(kindCompletion)},
		"/v1/messages/count_tokens": {http.MethodPost: s.handleCountTokens},
		"/v1/messages":              {http.MethodPost: s.handleMessages},
		"/tokenize":                 {http.MethodPost: s.handleTokenize},
		"/detokenize":               {http.MethodPost: s.handleDetokenize},
		"/v1/cache/status":          {http.MethodGet: s.handleCacheStatus},
		"/reset_prefix_cache":       {http.MethodPost: s.handleResetCache},
		"/v1/stats":                 {http.MethodGet: s.handleStats},
		"/metrics":                  {http.MethodGet: s.handleMetrics},
	}
	return s, nil
}

// keepAliveHeader advertises idle, rounded down to whole seconds, so a
// client never waits past it; "" when that is 0.
func keepAliveHeader(idle time.Duration) string {
	if n := int64(idle / time.Second); n > 0 {
		return fmt.Sprintf("timeout=%d", n)
	}
	return ""
}

// Config returns the effective configuration (defaults applied).
func (s *Server) Config() Config {
	c := s.cfg
	c.Faults = append([]Fault(nil), c.Faults...) // the Server's copy stays private
	return c
}

// Handler returns the HTTP handler serving every endpoint. Requests after
// Close get 503.
func (s *Server) Handler() http.Handler { return handler{s} }

type handler struct{ s *Server }

// SessionHeader is the route session header; the simulator echoes it on
// every answer, as a route node does, so it can stand in for one.
const SessionHeader = "X-Meshnet-Session"

func (h handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := h.s
	if v := r.Header.Get(SessionHeader); v != "" {
		w.Header().Set(SessionHeader, v)
	}
	if s.keepAlive != "" {
		w.Header().Set("Keep-Alive", s.keepAlive)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, "server_error", "server is shutting down")
		return
	}
	s.handlers.Add(1)
	s.mu.Unlock()
	defer s.handlers.Done()

	methods, ok := s.routes[r.URL.Path]
	if !ok {
		writeError(w, http.StatusNotFound, "not_found_error", fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path))
		return
	}
	fn, ok := methods[r.Method]
	if !ok && r.Method == http.MethodHead {
		fn, ok = methods[http.MethodGet]
	}
	if !ok {
		for m := range methods {
			w.Header().Set("Allow", m)
		}
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", fmt.Sprintf("method %s not allowed on %s", r.Method, r.URL.Path))
		return
	}
	if s.cfg.APIKey != "" && strings.HasPrefix(r.URL.Path, "/v1/") && !s.authorized(r) {
		writeError(w, http.StatusUnauthorized, "authentication_error", "missing or invalid API key")
		return
	}
	fn(w, r)
}

func (s *Server) authorized(r *http.Request) bool {
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		key = r.Header.Get("X-Api-Key") // Anthropic-style clients (count_tokens)
	}
	return key == s.cfg.APIKey
}

// Start listens on addr ("127.0.0.1:0" picks a free port) and serves until
// ctx ends or Close is called. It returns the base URL, e.g.
// "http://127.0.0.1:41234"; an unspecified host is reported as 127.0.0.1.
func (s *Server) Start(ctx context.Context, addr string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", errClosed
	}
	if s.srv != nil {
		return "", errors.New("sim: server already started")
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("sim: listen on %s: %w", addr, err)
	}
	s.srv = s.HTTPServer()
	s.serveDone = make(chan struct{})
	go func(srv *http.Server, done chan<- struct{}) {
		defer close(done)
		_ = srv.Serve(ln) // always ErrServerClosed after Close
	}(s.srv, s.serveDone)
	go func() {
		select {
		case <-ctx.Done():
			_ = s.Close()
		case <-s.done:
		}
	}()
	return baseURL(ln.Addr()), nil
}

// HTTPServer is an http.Server for Handler with the simulator's connection
// timeouts, for a caller that serves it itself (e.g. behind TLS).
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler: s.Handler(),
		// http.Server waits IdleTimeout for the next request's first byte
		// and ReadHeaderTimeout for a header from when it starts reading;
		// on a fresh connection that is from accept, so ReadHeaderTimeout
		// is the first request's wait (see FirstRequestTimeout).
		IdleTimeout:       s.cfg.IdleTimeout,
		ReadHeaderTimeout: FirstRequestTimeout(s.cfg.IdleTimeout),
		// No write timeout: streams legitimately last minutes.
	}
}

func baseURL(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return "http://" + a.String()
	}
	host := tcp.IP.String()
	if tcp.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, fmt.Sprint(tcp.Port))
}

// Close stops serving: it closes the listener and open connections, wakes
// every waiting or running request, returns once all of them have
// returned, and flushes the request log. It is safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		srv, serveDone := s.srv, s.serveDone
		s.mu.Unlock()
		close(s.done)
		if srv != nil {
			if err := srv.Close(); err != nil {
				s.closeErr = fmt.Errorf("sim: close http server: %w", err)
			}
			<-serveDone
		}
		s.sched.close()
		s.handlers.Wait()
		if err := s.reqLog.flush(); err != nil {
			s.closeErr = errors.Join(s.closeErr, err)
		}
	})
	return s.closeErr
}

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	st := Stats{
		Requests:         s.requests.Load(),
		Succeeded:        s.succeededStop.Load() + s.succeededLength.Load(),
		Aborted:          s.aborted.Load(),
		Running:          s.sched.running.Load(),
		Waiting:          s.sched.waiting.Load(),
		PeakRunning:      s.sched.peakRunning.Load(),
		PromptTokens:     s.promptTokens.Load(),
		GenerationTokens: s.sched.genTokens.Load(),
		CacheQueryTokens: s.cacheQueryTokens.Load(),
		CacheHitTokens:   s.cacheHitTokens.Load(),
		FaultsInjected:   s.faults.snapshot(),
	}
	st.CacheMissTokens = st.CacheQueryTokens - st.CacheHitTokens
	s.ttftExactMu.Lock()
	if h := s.ttftExact; h.Count() > 0 {
		st.ServerTTFTMS = map[string]float64{"count": float64(h.Count()), "min": h.Min(), "p50": h.Quantile(50),
			"p90": h.Quantile(90), "p99": h.Quantile(99), "max": h.Max()}
	}
	s.ttftExactMu.Unlock()
	if s.cache != nil {
		blocks, evicted := s.cache.usage()
		st.CacheBlocks = blocks
		st.CacheUsedTokens = blocks * s.cfg.BlockTokens
		st.CacheCapacityTokens = s.cache.capBlocks * s.cfg.BlockTokens
		st.CacheEvictedBlocks = evicted
	}
	return st
}

// ResetPrefixCache drops every cached block (counters are kept).
func (s *Server) ResetPrefixCache() {
	if s.cache != nil {
		s.cache.reset()
	}
}
