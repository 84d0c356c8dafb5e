package framework

import "github.com/lockstep-dev/lockstep/framework/internal/apierror"

// Code is an error code: a closed set, each with exactly one HTTP status, the
// same in every contract version. Code.HTTPStatus returns the status a code
// travels under (unknown codes are internal errors, 500); Code.Valid
// reports whether a code is one of those defined here.
type Code = apierror.Code

// Every code the runtime and handlers may return.
const (
	CodeInvalidArgument   = apierror.CodeInvalidArgument
	CodeUnauthenticated   = apierror.CodeUnauthenticated
	CodePermissionDenied  = apierror.CodePermissionDenied
	CodeNotFound          = apierror.CodeNotFound
	CodeIncompatiblePeer  = apierror.CodeIncompatiblePeer
	CodeHandshakeRequired = apierror.CodeHandshakeRequired
	CodeConflict          = apierror.CodeConflict
	CodePayloadTooLarge   = apierror.CodePayloadTooLarge
	CodeResourceExhausted = apierror.CodeResourceExhausted
	CodeInternal          = apierror.CodeInternal
	CodeUnavailable       = apierror.CodeUnavailable
	CodeDeadlineExceeded  = apierror.CodeDeadlineExceeded
	CodeCanceled          = apierror.CodeCanceled
	// CodeUnknown means "outcome unknown": a keyed call failed after it
	// may have reached a handler, and the server instance that could
	// answer its replay is gone. The client gives it; a server never does.
	CodeUnknown = apierror.CodeUnknown
)

// codeForStatus guesses a code for an HTTP answer that carried no lockstep
// error body (a proxy's 502, a pinned peer's 404).
func codeForStatus(status int) Code { return apierror.ForStatus(status) }
