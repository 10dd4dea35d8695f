package live

import (
	"fmt"

	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/report"
)

// sampleOf is the recorded form of one request: what every fold, the
// report's samples and --samples-out read. Its figures are the result's
// report.RequestMetrics as measured; retries are the request's retried
// 429/503 attempts.
func sampleOf(res measure.Result, retries int, phase, point string, index int, startMS float64) report.RequestSample {
	s := report.RequestSample{
		Phase: phase, Point: point, Index: index, StartMS: startMS, OK: res.Err == nil,
		HTTPStatus: res.HTTPStatus, BytesReceived: res.BytesReceived, RequestMetrics: res.RequestMetrics,
		Retries: retries, StaleConnectionRetries: res.StaleConnectionRetries,
	}
	if res.Err != nil {
		s.Error = &report.RequestError{Class: string(res.Err.Class), Status: res.Err.Status, Message: res.Err.Message}
	}
	return s
}

func requestName(phase, point string, index int) string {
	if point != "" {
		return fmt.Sprintf("%s %s #%d", phase, point, index)
	}
	return fmt.Sprintf("%s #%d", phase, index)
}
