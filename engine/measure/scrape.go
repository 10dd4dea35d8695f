package measure

// Metric types of a scraped series, as its family's # TYPE line declares
// them (no TYPE line: untyped).
const (
	MetricCounter   = "counter"
	MetricGauge     = "gauge"
	MetricHistogram = "histogram"
	MetricSummary   = "summary"
	MetricUntyped   = "untyped"
)

// Scrape is one read of a server's Prometheus /metrics.
type Scrape struct {
	// Series by key, each key once.
	Series []Series
	// Warnings name what the scrape lost: lines the parser rejected and
	// values a report cannot carry (NaN, ±Inf).
	Warnings []string
}

// Series is one label set of a metric family.
type Series struct {
	// Key is the family name, then its labels sorted by name
	// (`vllm:prompt_tokens_total{model_name="m"}`), or the bare name.
	Key      string
	Family   string
	Labelled bool
	Type     string
	// Value of a counter, gauge or untyped series.
	Value float64
	// Count and Sum of a histogram or summary.
	Count, Sum float64
	// Buckets of a histogram: cumulative counts by increasing bound, +Inf last.
	Buckets []Bucket
	// Quantiles of a summary, by increasing quantile.
	Quantiles []Quantile
}

// Bucket is one cumulative histogram bucket.
type Bucket struct {
	// LE is the bound as a report key ("0.25", "+Inf").
	LE         string
	UpperBound float64
	Count      float64
}

// Quantile is one quantile a summary reports.
type Quantile struct {
	// Q is the quantile as a report key ("0.99").
	Q     string
	Value float64
}
