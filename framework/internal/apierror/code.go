package apierror

import "net/http"

// Code is an error code: a closed set, each with exactly one HTTP status, the
// same in every contract version.
type Code string

// Every code the runtime and handlers may return.
const (
	CodeInvalidArgument   Code = "invalid_argument"
	CodeUnauthenticated   Code = "unauthenticated"
	CodePermissionDenied  Code = "permission_denied"
	CodeNotFound          Code = "not_found"
	CodeIncompatiblePeer  Code = "incompatible_peer"
	CodeHandshakeRequired Code = "handshake_required"
	CodeConflict          Code = "conflict"
	CodePayloadTooLarge   Code = "payload_too_large"
	CodeResourceExhausted Code = "resource_exhausted"
	CodeInternal          Code = "internal"
	CodeUnavailable       Code = "unavailable"
	CodeDeadlineExceeded  Code = "deadline_exceeded"
	CodeCanceled          Code = "canceled"
	// CodeUnknown means "outcome unknown": a keyed call failed after it
	// may have reached a handler, and the server instance that could
	// answer its replay is gone. The client gives it; a server never does.
	CodeUnknown Code = "unknown"
)

// codeStatus is the one mapping from codes to HTTP statuses.
var codeStatus = map[Code]int{
	CodeInvalidArgument:   http.StatusBadRequest,
	CodeUnauthenticated:   http.StatusUnauthorized,
	CodePermissionDenied:  http.StatusForbidden,
	CodeNotFound:          http.StatusNotFound,
	CodeIncompatiblePeer:  http.StatusConflict,
	CodeHandshakeRequired: http.StatusConflict,
	CodeConflict:          http.StatusConflict,
	CodePayloadTooLarge:   http.StatusRequestEntityTooLarge,
	CodeResourceExhausted: http.StatusTooManyRequests,
	CodeInternal:          http.StatusInternalServerError,
	CodeUnavailable:       http.StatusServiceUnavailable,
	CodeDeadlineExceeded:  http.StatusGatewayTimeout,
	// 499 is nginx's "client closed request", as gRPC-gateway maps
	// CANCELLED.
	CodeCanceled: statusClientClosedRequest,
	CodeUnknown:  http.StatusInternalServerError,
}

// statusClientClosedRequest is the status of canceled: the caller gave up.
const statusClientClosedRequest = 499

// HTTPStatus returns the HTTP status a code travels under; unknown codes are
// internal errors (500).
func (c Code) HTTPStatus() int {
	if s, ok := codeStatus[c]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Valid reports whether c is one of the defined codes.
func (c Code) Valid() bool {
	_, ok := codeStatus[c]
	return ok
}

// ForStatus guesses a code for an HTTP answer that carried no lockstep
// error body (a proxy's 502, a pinned peer's 404).
func ForStatus(status int) Code {
	switch status {
	case http.StatusBadRequest:
		return CodeInvalidArgument
	case http.StatusUnauthorized:
		return CodeUnauthenticated
	case http.StatusForbidden:
		return CodePermissionDenied
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusConflict:
		return CodeConflict
	case http.StatusRequestEntityTooLarge:
		return CodePayloadTooLarge
	case http.StatusTooManyRequests:
		return CodeResourceExhausted
	case http.StatusBadGateway, http.StatusServiceUnavailable:
		return CodeUnavailable
	case http.StatusGatewayTimeout:
		return CodeDeadlineExceeded
	case statusClientClosedRequest:
		return CodeCanceled
	}
	return CodeInternal
}

// Codes returns every defined code, in no particular order.
func Codes() []Code {
	out := make([]Code, 0, len(codeStatus))
	for c := range codeStatus {
		out = append(out, c)
	}
	return out
}
