package sim

import (
	"math/bits"
	"sync"
)

// prefixCache is a block-level prefix cache like vLLM's automatic prefix
// caching. Each full block of tokens is keyed by a chain hash (previous
// block's hash + this block's tokens), so a block is only reachable through
// the exact prefix that produced it: changing one early token misses every
// block after it. Eviction is LRU by block; lookups and inserts touch a
// chain from its tail to its head, so a prefix's head is always more recent
// than its tail and eviction trims chains from the end rather than cutting
// off their reachable start.
type prefixCache struct {
	blockTokens int
	capBlocks   int

	mu     sync.Mutex
	blocks map[uint64]*lruNode
	head   lruNode // sentinel: head.next is most recent, head.prev least recent

	evictedBlocks int64
}

type lruNode struct {
	hash       uint64
	prev, next *lruNode
}

func newPrefixCache(capacityTokens, blockTokens int) *prefixCache {
	c := &prefixCache{
		blockTokens: blockTokens,
		capBlocks:   capacityTokens / blockTokens,
		blocks:      make(map[uint64]*lruNode),
	}
	c.head.next, c.head.prev = &c.head, &c.head
	return c
}

// hashSeed roots every chain, so block 0 hashes differ from a bare token mix.
const hashSeed = 0x7f4a7c159e3779b9

// mix64 is a wyhash-style mixer: fast, with good avalanche for chain keys.
func mix64(h, v uint64) uint64 {
	hi, lo := bits.Mul64(h^v^0xa0761d6478bd642f, 0xe7037ed1a0b428db)
	return hi ^ lo
}

// blockHashes appends the chain hashes of the full blocks of tokens to dst.
func blockHashes(dst []uint64, tokens []int, blockTokens int) []uint64 {
	h := uint64(hashSeed)
	for end := blockTokens; end <= len(tokens); end += blockTokens {
		for _, t := range tokens[end-blockTokens : end] {
			h = mix64(h, uint64(t))
		}
		dst = append(dst, h)
	}
	return dst
}

// hashTokens is a whole-sequence hash, used to seed the output text.
func hashTokens(tokens []int) uint64 {
	h := uint64(hashSeed)
	for _, t := range tokens {
		h = mix64(h, uint64(t))
	}
	return mix64(h, uint64(len(tokens)))
}

// lookup returns how many leading blocks of the chain are cached, looking at
// no more than maxBlocks, and marks them recently used.
func (c *prefixCache) lookup(hashes []uint64, maxBlocks int) int {
	hashes = hashes[:min(len(hashes), maxBlocks)]
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for n < len(hashes) {
		if _, ok := c.blocks[hashes[n]]; !ok {
			break
		}
		n++
	}
	for i := n - 1; i >= 0; i-- {
		c.touch(c.blocks[hashes[i]])
	}
	return n
}

// insert adds a chain's blocks (at most the capacity's worth, from the
// head) and evicts least-recently-used blocks beyond capacity.
func (c *prefixCache) insert(hashes []uint64) {
	hashes = hashes[:min(len(hashes), c.capBlocks)]
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(hashes) - 1; i >= 0; i-- {
		if n, ok := c.blocks[hashes[i]]; ok {
			c.touch(n)
			continue
		}
		n := &lruNode{hash: hashes[i]}
		c.blocks[n.hash] = n
		c.pushFront(n)
	}
	for len(c.blocks) > c.capBlocks {
		old := c.head.prev
		c.unlink(old)
		delete(c.blocks, old.hash)
		c.evictedBlocks++
	}
}

// reset drops every block (POST /reset_prefix_cache).
func (c *prefixCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.blocks)
	c.head.next, c.head.prev = &c.head, &c.head
}

// usage returns the cached block count and the blocks evicted so far.
func (c *prefixCache) usage() (blocks int, evicted int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.blocks), c.evictedBlocks
}

func (c *prefixCache) touch(n *lruNode) {
	c.unlink(n)
	c.pushFront(n)
}

func (c *prefixCache) pushFront(n *lruNode) {
	n.prev, n.next = &c.head, c.head.next
	c.head.next.prev = n
	c.head.next = n
}

func (c *prefixCache) unlink(n *lruNode) {
	n.prev.next, n.next.prev = n.next, n.prev
	n.prev, n.next = nil, nil
}
