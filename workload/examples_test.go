package workload

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the example datasets and traces under examples/data")

// The example datasets and traces are made here, seeded, nothing
// downloaded: TestExampleDataIsGenerated fails when a file under
// examples/data differs from what this code makes, and -update rewrites it.
var exampleFiles = map[string]func() []byte{
	"chat.jsonl":     genChatJSONL,
	"sharegpt.json":  genShareGPT,
	"mooncake.jsonl": genMooncake,
	"burstgpt.csv":   genBurstGPT,
	"azure.csv":      genAzure,
}

func TestExampleDataIsGenerated(t *testing.T) {
	dir := filepath.Join("..", "examples", "data")
	for name, gen := range exampleFiles {
		t.Run(name, func(t *testing.T) {
			want := gen()
			path := filepath.Join(dir, name)
			if *update {
				if err := os.WriteFile(path, want, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test ./workload -run TestExampleDataIsGenerated -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s differs from its generator; go test ./workload -run TestExampleDataIsGenerated -update", path)
			}
		})
	}
}

var topics = strings.Fields("caching batching routing scheduling tokenizers quantization attention sharding replication compression streaming retries backpressure latency throughput")
var verbs = []string{"Summarize", "Explain", "Compare", "List the trade-offs of", "Write a short note on", "Give three examples of"}
var filler = strings.Fields("the server keeps a queue of requests and sends each one to a worker when a slot is free so that long prompts do not block short ones while the cache holds recent prefixes for reuse across turns of a conversation")

func sentence(rng *rand.Rand, words int) string {
	var b strings.Builder
	for i := 0; i < words; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(filler[rng.IntN(len(filler))])
	}
	b.WriteByte('.')
	return b.String()
}

func genChatJSONL() []byte {
	rng := rand.New(rand.NewPCG(1, 15))
	var b bytes.Buffer
	for i := 0; i < 200; i++ {
		topic := topics[rng.IntN(len(topics))]
		ask := fmt.Sprintf("%s %s in LLM serving. %s", verbs[rng.IntN(len(verbs))], topic, sentence(rng, 10+rng.IntN(300)))
		out := 8 + rng.IntN(120)
		var line any
		if i%4 == 0 {
			line = map[string]any{"messages": []map[string]string{{"role": "system", "content": "You are a concise assistant."}, {"role": "user", "content": ask}}, "output_tokens": out}
		} else {
			line = map[string]any{"prompt": ask, "output_tokens": out}
		}
		j, _ := json.Marshal(line)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func genShareGPT() []byte {
	rng := rand.New(rand.NewPCG(2, 15))
	type turn struct {
		From  string `json:"from"`
		Value string `json:"value"`
	}
	type conv struct {
		ID            string `json:"id"`
		Conversations []turn `json:"conversations"`
	}
	var all []conv
	for i := 0; i < 120; i++ {
		c := conv{ID: fmt.Sprintf("ex%03d", i)}
		turns := 2 + 2*rng.IntN(3)
		if i%10 == 9 {
			turns = 1 // a human turn with no reply: skipped, as ShareGPT has many
		}
		for j := 0; j < turns; j++ {
			if j%2 == 0 {
				c.Conversations = append(c.Conversations, turn{"human", fmt.Sprintf("%s %s? %s", verbs[rng.IntN(len(verbs))], topics[rng.IntN(len(topics))], sentence(rng, 5+rng.IntN(200)))})
			} else {
				c.Conversations = append(c.Conversations, turn{"gpt", sentence(rng, 10+rng.IntN(90))})
			}
		}
		all = append(all, c)
	}
	j, _ := json.MarshalIndent(all, "", "  ")
	return append(j, '\n')
}

// traceTimes are n bursty arrival offsets averaging rate per second.
func traceTimes(rng *rand.Rand, n int, rate float64) []time.Duration {
	out := make([]time.Duration, n)
	t := 0.0
	for i := range out {
		out[i] = time.Duration(t * float64(time.Second))
		// Gamma-ish gaps (shape 0.5 by a sum of squared normals) are burstier than Poisson.
		z := rng.NormFloat64()
		t += z * z / rate
	}
	return out
}

func genMooncake() []byte {
	rng := rand.New(rand.NewPCG(3, 15))
	const block = 64
	var b bytes.Buffer
	nextID := int64(0)
	newIDs := func(k int) []int64 {
		ids := make([]int64, k)
		for i := range ids {
			ids[i] = nextID
			nextID++
		}
		return ids
	}
	// System prompts shared by many requests, and sessions whose next turn
	// repeats the whole previous prompt: Mooncake's prefix structure.
	systems := make([][]int64, 6)
	for i := range systems {
		systems[i] = newIDs(1 + rng.IntN(4))
	}
	var sessions [][]int64
	for i, at := range traceTimes(rng, 600, 10) {
		var ids []int64
		if len(sessions) > 0 && rng.Float64() < 0.4 {
			k := rng.IntN(len(sessions))
			ids = append(append([]int64(nil), sessions[k]...), newIDs(1+rng.IntN(3))...)
			if len(ids) > 32 {
				ids = ids[:32]
			}
			sessions[k] = ids
		} else {
			sys := systems[int(math.Min(float64(len(systems)-1), rng.ExpFloat64()*2))]
			ids = append(append([]int64(nil), sys...), newIDs(1+rng.IntN(8))...)
			sessions = append(sessions, ids)
		}
		input := (len(ids)-1)*block + 1 + rng.IntN(block)
		out := 4 + rng.IntN(40)
		j, _ := json.Marshal(map[string]any{"timestamp": at.Milliseconds(), "input_length": input, "output_length": out, "hash_ids": ids})
		b.Write(j)
		b.WriteByte('\n')
		_ = i
	}
	return b.Bytes()
}

func genBurstGPT() []byte {
	rng := rand.New(rand.NewPCG(4, 15))
	var b bytes.Buffer
	b.WriteString("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n")
	for _, at := range traceTimes(rng, 300, 10) {
		in, out := 20+rng.IntN(1200), rng.IntN(200)
		if rng.IntN(50) == 0 {
			out = 0 // a failed request, as BurstGPT logs them
		}
		fmt.Fprintf(&b, "%.3f,ChatGPT,%d,%d,%d,Conversation log\n", at.Seconds()+1000, in, out, in+out)
	}
	return b.Bytes()
}

func genAzure() []byte {
	rng := rand.New(rand.NewPCG(5, 15))
	var b bytes.Buffer
	b.WriteString("TIMESTAMP,ContextTokens,GeneratedTokens\n")
	base := time.Date(2023, 11, 16, 18, 15, 46, 0, time.UTC)
	for _, at := range traceTimes(rng, 300, 10) {
		fmt.Fprintf(&b, "%s,%d,%d\n", base.Add(at).Format("2006-01-02 15:04:05.0000000"), 50+rng.IntN(3000), 1+rng.IntN(150))
	}
	return b.Bytes()
}
