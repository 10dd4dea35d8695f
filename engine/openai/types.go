package openai

import (
	"github.com/tollgate-dev/tollgate/engine/measure"
	"github.com/tollgate-dev/tollgate/engine/transport"
)

// The request, result and error types are protocol-neutral (engine/measure);
// these names keep this package's API readable on its own.
type (
	Message          = measure.Message
	Request          = measure.Request
	ErrorClass       = measure.ErrorClass
	Error            = measure.Error
	Result           = measure.Result
	Metrics          = measure.Metrics
	CalibrateOptions = measure.CalibrateOptions
	Calibration      = measure.Calibration
	MetadataEntry    = measure.MetadataEntry
	ServerTimings    = measure.ServerTimings
)

// Endpoints, error classes, arrival clocks and token count sources.
const (
	EndpointChat           = measure.EndpointChat
	EndpointCompletions    = measure.EndpointCompletions
	ClassConnect           = measure.ClassConnect
	ClassTimeoutFirstToken = measure.ClassTimeoutFirstToken
	ClassTimeoutIdle       = measure.ClassTimeoutIdle
	ClassTimeoutTotal      = measure.ClassTimeoutTotal
	ClassHTTPStatus        = measure.ClassHTTPStatus
	ClassProtocol          = measure.ClassProtocol
	ClassTruncated         = measure.ClassTruncated
	ClassReset             = measure.ClassReset
	ClassCanceled          = measure.ClassCanceled
	ClassStaleConnection   = measure.ClassStaleConnection
	ClassRedirect          = measure.ClassRedirect
	ArrivalKernel          = measure.ArrivalKernel
	ArrivalRead            = measure.ArrivalRead
	SourceUsage            = measure.SourceUsage
	SourceTimings          = measure.SourceTimings
	SourceSSEEvents        = measure.SourceSSEEvents
)

// ErrorClasses lists every class a request can fail with, in report order.
var ErrorClasses = measure.ErrorClasses

// The errors a protocol shares, from engine/transport.
type StreamError = transport.StreamError

var (
	ErrNoOutput        = transport.ErrNoOutput
	ErrBadBody         = transport.ErrBadBody
	ErrBadCount        = transport.ErrBadCount
	ErrTruncated       = transport.ErrTruncated
	ErrStaleConnection = transport.ErrStaleConnection
)
