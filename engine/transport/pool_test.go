package transport

import (
	"net/http"
	"testing"
	"time"
)

func TestKeepAliveHints(t *testing.T) {
	tests := []struct {
		name    string
		values  []string
		timeout time.Duration
		max     int
	}{
		{"llama-server", []string{"timeout=5, max=100"}, 5 * time.Second, 100},
		{"spacing and case", []string{" Timeout = 2 ,MAX=7"}, 2 * time.Second, 7},
		{"two headers", []string{"timeout=3", "max=4"}, 3 * time.Second, 4},
		{"garbage ignored", []string{"timeout=x, max=-1, foo, =3"}, 0, 0},
		{"absent", nil, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tt.values {
				h.Add("Keep-Alive", v)
			}
			to, m := keepAliveHints(h)
			if to != tt.timeout || m != tt.max {
				t.Errorf("got %v, %d; want %v, %d", to, m, tt.timeout, tt.max)
			}
		})
	}
}
