package schema

import "testing"

// The compile each command pays once, on its first scenario (or report)
// validation: published is the published schema compiled with the
// validator's defaults (meta-schema check included), embedded the one a
// command makes (the lean or plain schema, no meta-schema check). bench/startup
// measures the whole process.
//
//	go test ./schema -run '^$' -bench Compile -count 10 | benchstat -col /how -
func BenchmarkCompile(b *testing.B) {
	for _, s := range []struct {
		name      string
		url       string
		doc, lean []byte
	}{
		{"scenario", ScenarioURL, scenarioJSON, scenarioLean},
		// scenario.plain.json, for a file with neither include nor profiles
		// (the quick start): the published row is the same as scenario's.
		{"plain", ScenarioURL, scenarioJSON, scenarioPlain},
		{"report", ReportURL, reportJSON, reportLean},
	} {
		for _, how := range []struct {
			name     string
			embedded bool
		}{{"published", false}, {"embedded", true}} {
			b.Run("schema="+s.name+"/how="+how.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					doc := s.doc
					if how.embedded {
						doc = s.lean
					}
					if _, err := compile(s.url, doc, how.embedded); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
