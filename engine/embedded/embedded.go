// Package embedded is the only adapter between a scenario's sim block and
// tollgate's simulator (engine/sim): the mapping, validation, start and stop,
// and the effective configuration the report shows.
package embedded

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"time"

	"github.com/tollgate-dev/tollgate/engine/sim"
	"github.com/tollgate-dev/tollgate/scenarios"
)

// Config maps a scenario's sim block onto the simulator's config.
func Config(s *scenarios.SimConfig) sim.Config {
	if s == nil {
		return sim.Config{}
	}
	// The simulator reads 0 as "default"; a 0 written in the scenario means
	// none, which the simulator spells as a nanosecond.
	dur := func(key string, d scenarios.Duration) time.Duration {
		if d.Duration == 0 && s.Has(key) {
			return time.Nanosecond
		}
		return d.Duration
	}
	faults := make([]sim.Fault, 0, len(s.Faults))
	for _, f := range s.Faults {
		faults = append(faults, sim.Fault{Kind: f.Kind, Probability: f.Probability, EveryNth: f.EveryNth,
			RetryAfter: f.RetryAfter.Duration, Stall: f.Stall.Duration, TrickleInterval: f.TrickleInterval.Duration, AfterTokens: f.AfterTokens})
	}
	var tools *sim.ToolCalls
	if t := s.ToolCalls; t != nil {
		d := sim.DefaultToolCalls()
		tools = &d
		if t.Probability != nil {
			tools.Probability = *t.Probability
		}
		if t.ArgumentTokens != 0 {
			tools.ArgumentTokens = t.ArgumentTokens
		}
		if t.PerReply != 0 {
			tools.PerReply = t.PerReply
		}
	}
	return sim.Config{
		Model: s.Model, TTFTBase: dur("ttft_base", s.TTFTBase), PrefillTokensPerS: s.PrefillTokensPerS,
		DecodeStep: dur("decode_step", s.DecodeStep), DecodeStepPerSeq: dur("decode_step_per_seq", s.DecodeStepPerSeq),
		MaxRunningSeqs: s.MaxRunningSeqs, CacheCapacityTokens: s.CacheCapacityTokens, BlockTokens: s.BlockTokens,
		DisablePrefixCache: s.DisablePrefixCache, MaxModelLen: s.MaxModelLen, DefaultMaxTokens: s.DefaultMaxTokens, Seed: s.Seed,
		ReasoningTokens: s.ReasoningTokens, Faults: faults, ToolCalls: tools,
	}
}

// Validate checks a sim block the way the simulator will (faults included),
// so a bad one is an invalid scenario whatever the flags.
func Validate(s *scenarios.SimConfig) error {
	srv, err := sim.New(Config(s))
	if err != nil {
		return err
	}
	return srv.Close()
}

// Start runs the simulator on 127.0.0.1 with a random port. It outlives
// ctx's cancellation (an interrupt) until stop is called, so requests in
// flight get their grace period.
func Start(ctx context.Context, s *scenarios.SimConfig) (baseURL string, stop func(), err error) {
	srv, err := sim.New(Config(s))
	if err != nil {
		return "", nil, fmt.Errorf("embedded simulator: %w", err)
	}
	baseURL, err = srv.Start(context.WithoutCancel(ctx), "127.0.0.1:0")
	if err != nil {
		_ = srv.Close()
		return "", nil, fmt.Errorf("embedded simulator: %w", err)
	}
	return baseURL, func() { _ = srv.Close() }, nil
}

// Effective is the simulator configuration a run will use, defaults filled
// in, for the report.
func Effective(s *scenarios.SimConfig) (map[string]any, error) {
	srv, err := sim.New(Config(s))
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	c := srv.Config()
	out := map[string]any{
		"model": c.Model, "max_model_len": c.MaxModelLen, "ttft_base": c.TTFTBase.String(),
		"prefill_tokens_per_s": c.PrefillTokensPerS, "decode_step": c.DecodeStep.String(),
		"decode_step_per_seq": c.DecodeStepPerSeq.String(), "max_running_seqs": c.MaxRunningSeqs,
		"cache_capacity_tokens": c.CacheCapacityTokens, "block_tokens": c.BlockTokens,
		"disable_prefix_cache": c.DisablePrefixCache, "default_max_tokens": c.DefaultMaxTokens, "seed": c.Seed,
	}
	if c.ReasoningTokens > 0 {
		out["reasoning_tokens"] = c.ReasoningTokens
	}
	if s != nil && len(s.Faults) > 0 {
		out["faults"] = s.Faults
	}
	if t := c.ToolCalls; t != nil {
		out["tool_calls"] = map[string]any{"probability": t.Probability, "argument_tokens": t.ArgumentTokens, "per_reply": t.PerReply}
	}
	return out, nil
}

// Served is the simulator on 127.0.0.1 over TLS: its base URL (https), the
// certificate pool that trusts it (a key made for this start, valid only
// for 127.0.0.1), the model it serves, and how to stop it.
type Served struct {
	BaseURL string
	Roots   *x509.CertPool
	Model   string
	Stop    func()
}

// StartTLS runs the simulator like Start, behind TLS with a fresh
// self-signed certificate, so a client pays a real TLS handshake for every
// connection it opens.
func StartTLS(ctx context.Context, s *scenarios.SimConfig) (*Served, error) {
	srv, err := sim.New(Config(s))
	if err != nil {
		return nil, fmt.Errorf("embedded simulator: %w", err)
	}
	cert, roots, err := selfSigned()
	if err != nil {
		_ = srv.Close()
		return nil, fmt.Errorf("embedded simulator: %w", err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(context.WithoutCancel(ctx), "tcp", "127.0.0.1:0")
	if err != nil {
		_ = srv.Close()
		return nil, fmt.Errorf("embedded simulator: listen: %w", err)
	}
	hs := srv.HTTPServer()
	hs.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.ServeTLS(ln, "", "")
	}()
	stop := func() {
		_ = hs.Close()
		<-done
		_ = srv.Close()
	}
	return &Served{BaseURL: "https://" + ln.Addr().String(), Roots: roots, Model: srv.Config().Model, Stop: stop}, nil
}

// selfSigned makes an ECDSA P-256 certificate for 127.0.0.1, valid for a
// day, and a pool that trusts it alone.
func selfSigned() (tls.Certificate, *x509.CertPool, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("tls key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()),
		Subject:      pkix.Name{CommonName: "tollgate embedded simulator"},
		NotBefore:    now.Add(-time.Minute), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:        true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("tls certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("tls certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool, nil
}
