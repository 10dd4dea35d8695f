package live_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/scenarios"
)

// Every request has a finite total deadline unless the scenario sets one:
// an endless stream that keeps the idle clock fed must still end.
func TestTotalTimeoutDefault(t *testing.T) {
	for _, tt := range []struct {
		name, timeouts string
		want           time.Duration
	}{
		{"unset", "", 30 * time.Minute},
		{"other timeouts set", "timeouts: {idle: 5s}", 30 * time.Minute},
		{"set", "timeouts: {total: 45s}", 45 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := scenarios.Parse("test.yaml", []byte(fmt.Sprintf(`
targets:
  s: {kind: openai, base_url: "http://127.0.0.1:1", %s}
phases:
  decode: {max_tokens: 2, prompt: {text: hi}}
`, tt.timeouts)), scenarios.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := sc.Runs[0].Target.OpenAI.Timeouts.Total.Duration; got != tt.want {
				t.Fatalf("total = %v, want %v", got, tt.want)
			}
		})
	}
}
