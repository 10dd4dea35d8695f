package schema

import "testing"

// The compile each command pays once, on its first scenario (or report)
// validation: published is the published schema compiled with the
// validator's defaults (meta-schema check included), embedded the one a
// command makes (the lean schema, no meta-schema check). bench/startup
// measures the whole process.
//
//	go test ./schema -run '^$' -bench Compile -count 10 | benchstat -col /how -
func BenchmarkCompile(b *testing.B) {
	for _, s := range []struct {
		name      string
		url       string
		doc, lean []byte
	}{{"scenario", ScenarioURL, scenarioJSON, scenarioLean}, {"report", ReportURL, reportJSON, reportLean}} {
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
