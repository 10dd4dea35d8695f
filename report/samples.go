package report

import (
	"encoding/json"
	"fmt"
)

// PhaseSamples returns the samples of a phase as typed slices, whichever way
// the report was obtained: in-process a phase holds []RequestSample or
// []SeamSample; decoded from JSON it holds []any of maps, which are
// re-encoded and decoded by the run's target kind (seam → SeamSample,
// anything else → RequestSample). A phase without samples gives two nil slices.
func PhaseSamples(p *Phase, targetKind string) ([]RequestSample, []SeamSample, error) {
	if p == nil || p.Samples == nil {
		return nil, nil, nil
	}
	switch s := p.Samples.(type) {
	case []RequestSample:
		return s, nil, nil
	case []SeamSample:
		return nil, s, nil
	}
	raw, err := json.Marshal(p.Samples)
	if err != nil {
		return nil, nil, fmt.Errorf("re-encoding samples: %w", err)
	}
	if targetKind == TargetSeam {
		var out []SeamSample
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, nil, fmt.Errorf("decoding seam samples: %w", err)
		}
		return nil, out, nil
	}
	var out []RequestSample
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, nil, fmt.Errorf("decoding request samples: %w", err)
	}
	return out, nil, nil
}
