package sim

import (
	"testing"
)

func TestPrefixCacheChain(t *testing.T) {
	const bt = 4
	c := newPrefixCache(1024, bt)
	a := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}
	ha := blockHashes(nil, a, bt)
	if len(ha) != 3 {
		t.Fatalf("%d blocks for 13 tokens of 4, want 3 (full blocks only)", len(ha))
	}
	if n := c.lookup(ha, 10); n != 0 {
		t.Fatalf("empty cache hit %d blocks", n)
	}
	c.insert(ha)

	tests := []struct {
		name   string
		tokens []int
		want   int
	}{
		{"identical", a, 3},
		{"longer with same prefix", append(append([]int{}, a...), 14, 15, 16, 17), 3},
		{"change in last block", []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 99, 12}, 2},
		{"change in first block misses all", []int{1, 99, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 0},
		{"same later blocks, different first", []int{0, 0, 0, 0, 5, 6, 7, 8}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.lookup(blockHashes(nil, tt.tokens, bt), 100); got != tt.want {
				t.Errorf("lookup = %d blocks, want %d", got, tt.want)
			}
		})
	}
	if got := c.lookup(ha, 1); got != 1 {
		t.Errorf("lookup capped at 1 block = %d", got)
	}
}

func TestPrefixCacheLRU(t *testing.T) {
	const bt = 2
	c := newPrefixCache(8, bt) // 4 blocks
	seqA := blockHashes(nil, []int{1, 1, 2, 2}, bt)
	seqB := blockHashes(nil, []int{3, 3, 4, 4}, bt)
	seqC := blockHashes(nil, []int{5, 5, 6, 6}, bt)
	c.insert(seqA)
	c.insert(seqB)
	// Touch A so B is the least recently used chain.
	if n := c.lookup(seqA, 2); n != 2 {
		t.Fatalf("A hit %d blocks, want 2", n)
	}
	c.insert(seqC) // 6 blocks into 4: evicts B entirely
	if n := c.lookup(seqB, 2); n != 0 {
		t.Errorf("B (least recent) still hits %d blocks", n)
	}
	if n := c.lookup(seqA, 2); n != 2 {
		t.Errorf("A (recent) hits %d blocks, want 2", n)
	}
	if n := c.lookup(seqC, 2); n != 2 {
		t.Errorf("C (newest) hits %d blocks, want 2", n)
	}
	if blocks, evicted := c.usage(); blocks != 4 || evicted != 2 {
		t.Errorf("usage = %d blocks, %d evicted; want 4, 2", blocks, evicted)
	}

	// Under pressure a chain loses its tail first, so its head still hits.
	c2 := newPrefixCache(6, bt) // 3 blocks
	long := blockHashes(nil, []int{1, 1, 2, 2, 3, 3}, bt)
	c2.insert(long)
	c2.insert(blockHashes(nil, []int{9, 9}, bt))
	if n := c2.lookup(long, 3); n != 2 {
		t.Errorf("after evicting one block the chain hits %d blocks, want its first 2", n)
	}
	c2.reset()
	if n := c2.lookup(long, 3); n != 0 {
		t.Errorf("after reset the chain hits %d blocks", n)
	}
}

// cachedTokens sends a completion with a token-id prompt and returns usage.
func cachedTokens(t *testing.T, ts *testServer, prompt []int) (promptTokens, cached int) {
	t.Helper()
	m := ts.postOK(t, "/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 1})
	return num(t, m, "usage.prompt_tokens"), num(t, m, "usage.prompt_tokens_details.cached_tokens")
}

func TestPrefixCacheOverHTTP(t *testing.T) {
	ts := startServer(t, fastConfig()) // 16-token blocks
	base := tokenIDs(1, 100)           // 6 full blocks + 4

	if _, c := cachedTokens(t, ts, base); c != 0 {
		t.Fatalf("cold request cached %d tokens", c)
	}
	t.Run("identical prompt hits whole blocks", func(t *testing.T) {
		if _, c := cachedTokens(t, ts, base); c != 96 {
			t.Errorf("cached_tokens = %d, want 96 (6 blocks of 16)", c)
		}
	})
	t.Run("same prefix plus suffix is a partial hit", func(t *testing.T) {
		longer := append(append([]int{}, base...), tokenIDs(2, 50)...)
		if _, c := cachedTokens(t, ts, longer); c != 96 {
			t.Errorf("cached_tokens = %d, want 96", c)
		}
	})
	t.Run("change in the first block misses everything", func(t *testing.T) {
		changed := append([]int{}, base...)
		changed[3]++
		if _, c := cachedTokens(t, ts, changed); c != 0 {
			t.Errorf("cached_tokens = %d, want 0", c)
		}
	})
	t.Run("change in the third block keeps two blocks", func(t *testing.T) {
		changed := append([]int{}, base...)
		changed[40]++
		if _, c := cachedTokens(t, ts, changed); c != 32 {
			t.Errorf("cached_tokens = %d, want 32", c)
		}
	})
	t.Run("a fully cached block-aligned prompt still computes its last block", func(t *testing.T) {
		aligned := tokenIDs(3, 64)
		cachedTokens(t, ts, aligned)
		if _, c := cachedTokens(t, ts, aligned); c != 48 {
			t.Errorf("cached_tokens = %d, want 48", c)
		}
	})
	st := ts.Stats()
	if st.CacheHitTokens == 0 || st.CacheMissTokens == 0 || st.CacheHitTokens+st.CacheMissTokens != st.CacheQueryTokens {
		t.Errorf("cache counters inconsistent: %+v", st)
	}
	cs := ts.getOK(t, "/v1/cache/status")
	if got := num(t, cs, "hit_tokens_total"); int64(got) != st.CacheHitTokens {
		t.Errorf("cache status hit_tokens_total = %d, Stats = %d", got, st.CacheHitTokens)
	}
	if num(t, cs, "used_tokens") == 0 || num(t, cs, "blocks") == 0 {
		t.Errorf("cache status shows an empty cache: %v", cs)
	}

	ts.postOK(t, "/reset_prefix_cache", map[string]any{})
	if _, c := cachedTokens(t, ts, base); c != 0 {
		t.Errorf("after reset cached_tokens = %d, want 0", c)
	}
}

func TestPrefixCacheEvictionOverHTTP(t *testing.T) {
	cfg := fastConfig()
	cfg.CacheCapacityTokens = 96 // 6 blocks of 16
	ts := startServer(t, cfg)
	// 40-token prompts: 2 full blocks each (the 1-token answer adds none).
	a, b, c := tokenIDs(10, 40), tokenIDs(20, 40), tokenIDs(30, 40)
	cachedTokens(t, ts, a)
	cachedTokens(t, ts, b)
	cachedTokens(t, ts, c) // cache full: a, b, c
	if _, n := cachedTokens(t, ts, a); n != 32 {
		t.Fatalf("a before pressure: cached %d, want 32", n)
	} // a is now the most recent; b the least
	cachedTokens(t, ts, tokenIDs(40, 40)) // evicts b
	if _, n := cachedTokens(t, ts, b); n != 0 {
		t.Errorf("b (least recently used) cached %d tokens, want 0 after eviction", n)
	}
	if _, n := cachedTokens(t, ts, a); n != 32 {
		t.Errorf("a (recently used) cached %d tokens, want 32", n)
	}
	if st := ts.Stats(); st.CacheEvictedBlocks == 0 || st.CacheUsedTokens > 96 {
		t.Errorf("stats after eviction: %+v", st)
	}
}

// The answer's full blocks are cached too, so a conversation's next turn
// hits its previous prompt and answer.
func TestPrefixCacheMultiTurn(t *testing.T) {
	ts := startServer(t, fastConfig())
	turn1 := []map[string]any{{"role": "user", "content": "Write a long story about caches."}}
	m := ts.postOK(t, "/v1/chat/completions", map[string]any{"messages": turn1, "max_tokens": 40, "ignore_eos": true})
	answer := str(t, m, "choices.0.message.content")
	p1, c1 := num(t, m, "usage.prompt_tokens"), num(t, m, "usage.completion_tokens")

	turn2 := append(turn1,
		map[string]any{"role": "assistant", "content": answer},
		map[string]any{"role": "user", "content": "Go on."})
	m2 := ts.postOK(t, "/v1/chat/completions", map[string]any{"messages": turn2, "max_tokens": 1})
	want := (p1 + c1) / 16 * 16
	if got := num(t, m2, "usage.prompt_tokens_details.cached_tokens"); got != want {
		t.Errorf("turn 2 cached_tokens = %d, want %d (full blocks of prompt %d + answer %d)", got, want, p1, c1)
	}
}

func TestDisabledPrefixCache(t *testing.T) {
	cfg := fastConfig()
	cfg.DisablePrefixCache = true
	ts := startServer(t, cfg)
	p := tokenIDs(5, 64)
	cachedTokens(t, ts, p)
	if _, c := cachedTokens(t, ts, p); c != 0 {
		t.Errorf("cached_tokens = %d with the cache disabled", c)
	}
}

func BenchmarkPrefixCacheLookup(b *testing.B) {
	c := newPrefixCache(1<<20, 16)
	prompt := tokenIDs(1, 2048)
	c.insert(blockHashes(nil, prompt, 16))
	hashes := make([]uint64, 0, 128)
	b.SetBytes(int64(len(prompt)))
	for b.Loop() {
		hashes = blockHashes(hashes[:0], prompt, 16)
		if c.lookup(hashes, len(hashes)) != 128 {
			b.Fatal("miss")
		}
	}
}
