package scenarios

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"

	"github.com/tollgate-dev/tollgate/workload"
)

// MaxDatasetPool bounds the prompts a phase keeps from a dataset when it
// does not know how many it will send (a duration-bound load phase) or
// samples with replacement: a seeded uniform sample of this many stands
// for the whole file, however large.
const MaxDatasetPool = 10_000

// DatasetInfo is what loading a phase's dataset found, for the report.
type DatasetInfo struct {
	File   string
	Path   string // as opened
	Format string
	// Read is the items in the file (its conversations, or its lines
	// that are not blank), and each is counted once more: Skipped, the
	// ShareGPT conversations with no prompt and reply; Filtered, those
	// outside the length filters; or Eligible, those within them. Used is
	// the prompts the phase holds (sampled from Eligible).
	Read, Skipped, Filtered, Eligible, Used int
	Replacement                             bool
	// Longest is the eligible item with the most prompt + output tokens
	// (by workload.EstimateTokens), and its line.
	Longest, LongestLine int
}

// datasetPhases are the phase kinds that take prompt.dataset.
var datasetPhases = []string{PhaseLoad, PhaseRequests, PhaseWarmup}

// resolve is name relative to the scenario file.
func resolve(scenarioFile, name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(filepath.Dir(scenarioFile), name)
}

// checkDataset checks prompt.dataset and its options, streams the file
// once, and keeps a seeded sample of the prompts within the length filters
// as the phase's FilePrompts (for a requests phase, its request list).
func checkDataset(d *decoder, p *Phase, path string) {
	e, scenarioFile := d.errs, d.file
	pr := &p.Prompt
	if pr.Dataset == "" {
		checkNoDatasetOptions(e, pr, path)
		return
	}
	if !checkDatasetOptions(e, p, path) {
		return
	}
	need, ok := datasetNeed(e, p, path)
	if !ok {
		return
	}
	replace := pr.Replacement != nil && *pr.Replacement
	full := resolve(scenarioFile, pr.Dataset)
	info := &DatasetInfo{File: pr.Dataset, Path: full, Format: pr.Format, Replacement: replace}
	rng := rand.New(rand.NewPCG(uint64(p.Seed), 0xda7a5e7))
	pool, ok := sampleDataset(d, p, path, info, rng, need)
	if !ok {
		return
	}
	rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	if replace && need > 0 {
		drawn := make([]*RequestSpec, need)
		for i := range drawn {
			drawn[i] = pool[rng.IntN(len(pool))]
		}
		pool = drawn
	}
	info.Used = len(pool)
	p.Dataset = info
	if p.Kind == PhaseRequests {
		p.Requests.List = pool
		return
	}
	p.FilePrompts = pool
}

// checkNoDatasetOptions reports the dataset options given without
// prompt.dataset, which would otherwise be silently ignored.
func checkNoDatasetOptions(e *errs, pr *PromptSpec, path string) {
	for _, k := range []string{"format", "replacement", "min_prompt_tokens", "max_prompt_tokens", "min_output_tokens", "max_output_tokens"} {
		if pr.Has(k) {
			e.add(pr.At(k), "%s.prompt.%s: applies with prompt.dataset", path, k)
		}
	}
}

// checkDatasetOptions checks that prompt.dataset fits the phase and that
// its format and length filters are sound, defaulting the format from the
// file's name. False means reading the file would be pointless.
func checkDatasetOptions(e *errs, p *Phase, path string) bool {
	pr := &p.Prompt
	if !oneOf(p.Kind, datasetPhases) {
		e.add(pr.At("dataset"), "%s.prompt.dataset: applies to %s phases, not %s", path, strings.Join(datasetPhases, ", "), p.Kind)
		return false
	}
	if pr.Text != "" || pr.File != "" {
		e.add(pr.Pos, "%s.prompt: give one of text, file or dataset", path)
		return false
	}
	if p.Has("prompt_tokens") {
		e.add(p.At("prompt_tokens"), "%s.prompt_tokens: does not apply with prompt.dataset (filter by prompt.min_prompt_tokens and max_prompt_tokens)", path)
	}
	if pr.Format == "" {
		pr.Format = workload.FormatJSONL
		if strings.HasSuffix(pr.Dataset, ".json") {
			pr.Format = workload.FormatShareGPT
		}
	}
	if !oneOf(pr.Format, workload.DatasetFormats) {
		e.add(pr.At("format"), "%s.prompt.format: unknown %q (one of %s)%s", path, pr.Format, strings.Join(workload.DatasetFormats, ", "), suggest(pr.Format, workload.DatasetFormats))
		return false
	}
	return checkDatasetFilters(e, pr, path)
}

// checkDatasetFilters checks the prompt and output token bounds, stopping
// at the first bad one.
func checkDatasetFilters(e *errs, pr *PromptSpec, path string) bool {
	for _, k := range []struct {
		key string
		v   int
	}{{"min_prompt_tokens", pr.MinPromptTokens}, {"max_prompt_tokens", pr.MaxPromptTokens}, {"min_output_tokens", pr.MinOutputTokens}, {"max_output_tokens", pr.MaxOutputTokens}} {
		if k.v < 0 || (k.v == 0 && pr.Has(k.key)) {
			e.add(pr.At(k.key), "%s.prompt.%s: must be at least 1, got %d", path, k.key, k.v)
			return false
		}
	}
	if pr.MaxPromptTokens > 0 && pr.MaxPromptTokens < pr.MinPromptTokens {
		e.add(pr.At("max_prompt_tokens"), "%s.prompt.max_prompt_tokens: %d is below min_prompt_tokens %d", path, pr.MaxPromptTokens, pr.MinPromptTokens)
		return false
	}
	if pr.MaxOutputTokens > 0 && pr.MaxOutputTokens < pr.MinOutputTokens {
		e.add(pr.At("max_output_tokens"), "%s.prompt.max_output_tokens: %d is below min_output_tokens %d", path, pr.MaxOutputTokens, pr.MinOutputTokens)
		return false
	}
	return true
}

// datasetNeed is how many prompts the phase sends, when it knows (0 when
// it does not: a duration-bound load phase). False when a requests phase
// gives no usable count.
func datasetNeed(e *errs, p *Phase, path string) (int, bool) {
	switch p.Kind {
	case PhaseLoad:
		points := max(1, len(p.Sweep.Concurrency)+len(p.Sweep.Rate))
		return p.Requests.Count * points, true
	case PhaseRequests:
		if p.Requests.List != nil {
			e.add(p.At("requests"), "%s.requests: with prompt.dataset a requests phase takes a count of prompts, e.g. requests: 20", path)
			return 0, false
		}
		if p.Requests.Count < 1 {
			e.add(p.At("requests"), "%s.requests: with prompt.dataset, how many prompts to send, e.g. requests: 20", path)
			return 0, false
		}
		return p.Requests.Count, true
	case PhaseWarmup:
		return p.Requests.Count, true
	}
	return 0, true
}

// sampleDataset streams the dataset once, counting into info, and keeps a
// seeded uniform sample of the eligible prompts: need of them, or
// MaxDatasetPool when need is unknown or prompts are drawn with
// replacement. False when the file cannot serve the phase.
func sampleDataset(d *decoder, p *Phase, path string, info *DatasetInfo, rng *rand.Rand, need int) ([]*RequestSpec, bool) {
	e, pr := d.errs, &p.Prompt
	at := pr.At("dataset")
	f, err := d.openNamed(at, info.Path, "dataset", MaxDataBytes)
	if err != nil {
		e.add(at, "%s.prompt.dataset: %v", path, err)
		return nil, false
	}
	defer f.Close()
	size := need
	if size == 0 || info.Replacement {
		size = MaxDatasetPool
	}
	var pool []*RequestSpec
	var lines []int
	fixed := p.Has("max_tokens")
	seen := 0 // the items the scan gave, besides those it skipped
	skipped, err := workload.ScanDataset(info.Path, f, pr.Format, func(it workload.Item) error {
		seen++
		in, err := withinFilters(pr, it, info.Path)
		if err != nil {
			return err
		}
		if !in {
			info.Filtered++
			return nil
		}
		info.Eligible++
		out := it.OutputTokens
		if fixed || out == 0 {
			out = p.MaxTokens
		}
		if c := it.PromptTokens + out; c > info.Longest {
			info.Longest, info.LongestLine = c, it.Line
		}
		spec := &RequestSpec{Prompt: it.Prompt, Messages: messagesOf(it.Messages)}
		if !fixed {
			spec.MaxTokens = it.OutputTokens
		}
		// Reservoir sampling (algorithm R): a uniform seeded sample of
		// size items in one pass, whatever the file's length.
		if len(pool) < size {
			pool = append(pool, spec)
			lines = append(lines, it.Line)
		} else if j := rng.IntN(info.Eligible); j < size {
			pool[j], lines[j] = spec, it.Line
		}
		return nil
	})
	info.Read, info.Skipped = seen+skipped, skipped
	if err != nil {
		e.add(at, "%s.prompt.dataset: %v", path, err)
		return nil, false
	}
	if info.Eligible == 0 {
		what := "holds no prompts"
		if info.Read > 0 {
			what = fmt.Sprintf("holds no prompts within the length filters (%d read: %d skipped, %d outside the filters)", info.Read, info.Skipped, info.Filtered)
		}
		e.add(at, "%s.prompt.dataset: %s %s", path, info.Path, what)
		return nil, false
	}
	if need > 0 && !info.Replacement && info.Eligible < need {
		e.add(at, "%s.prompt.dataset: %s holds %d prompts within the filters and the phase sends %d; give prompt.replacement: true or fewer requests", path, info.Path, info.Eligible, need)
		return nil, false
	}
	return pool, true
}

// withinFilters reports whether a dataset item passes the length filters.
// An item with no output length (a JSONL line without output_tokens)
// under an output filter is an error at its line: the filter cannot tell,
// and letting it through (or dropping it) would decide in silence.
func withinFilters(pr *PromptSpec, it workload.Item, file string) (bool, error) {
	if it.OutputTokens == 0 && (pr.MinOutputTokens > 0 || pr.MaxOutputTokens > 0) {
		key := "min_output_tokens"
		if pr.MinOutputTokens == 0 {
			key = "max_output_tokens"
		}
		return false, fmt.Errorf("%s:%d: field \"output_tokens\": missing, and prompt.%s filters on it (give every line its output_tokens, or filter by prompt length only)", file, it.Line, key)
	}
	return !(pr.MinPromptTokens > 0 && it.PromptTokens < pr.MinPromptTokens ||
		pr.MaxPromptTokens > 0 && it.PromptTokens > pr.MaxPromptTokens ||
		pr.MinOutputTokens > 0 && it.OutputTokens < pr.MinOutputTokens ||
		pr.MaxOutputTokens > 0 && it.OutputTokens > pr.MaxOutputTokens), nil
}

func messagesOf(ms []workload.Message) []MessageSpec {
	if len(ms) == 0 {
		return nil
	}
	out := make([]MessageSpec, len(ms))
	for i, m := range ms {
		out[i] = MessageSpec{Role: m.Role, Content: m.Content}
	}
	return out
}
