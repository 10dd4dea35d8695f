package report

import (
	"encoding/json"
	"strings"
	"testing"
)

// A live sample's JSON leaves out what a client cannot measure; a stub's
// keeps every field, zeros included; both decode back to the same sample.
func TestSeamSampleJSON(t *testing.T) {
	for _, tc := range []struct {
		name          string
		s             SeamSample
		want, without []string
	}{
		{name: "stub keeps its zero costs", s: SeamSample{Phase: "decode", SeamLatencyMS: 1},
			want: []string{`"model_ms":0`, `"queue_wait_ms":0`, `"transport_ms":0`, `"virtual_start_ms":0`}, without: []string{`"source"`, `"ttfb_ms"`}},
		{name: "live leaves out the breakdown", s: SeamSample{Source: SourceLive, Phase: "decode", SeamLatencyMS: 1, TTFBMS: F(0.5), StartMS: F(0), RequestBytes: 3, ResponseBytes: 4, WireBytes: 7},
			want:    []string{`"source":"live"`, `"ttfb_ms":0.5`, `"start_ms":0`, `"request_bytes":3`, `"seam_latency_ms":1`, `"connection_setup_ms":0`},
			without: []string{"model_ms", "encode_ms", "framing_ms", "metadata_ms", "copy_allocation", "compression_ms", "decompression_ms", "queue_wait_ms", "transport_ms", "virtual_start_ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.s)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("%s lacks %s", b, w)
				}
			}
			for _, w := range tc.without {
				if strings.Contains(string(b), w) {
					t.Errorf("%s has %s", b, w)
				}
			}
			var back SeamSample
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			again, _ := json.Marshal(back)
			if string(again) != string(b) {
				t.Errorf("round trip:\n%s\n%s", b, again)
			}
		})
	}
}
