package framework

import (
	"context"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
)

// Error is the one error type of lockstep: a code, a message, optional
// structured details, and the cause. On the wire it is
// {"code","message","details"}. Its methods are Code, Message, Details,
// WithDetails (attach structured details, marshalled to JSON), Error and
// Unwrap; match it with errors.As(err, &e) where e is a *Error.
//
// It is defined in an internal leaf package, so that packages the
// framework imports (jsonwire, whose validators return it) can build it
// too; Error is that same type, not a copy.
type Error = apierror.Error

// NewError wraps err with a code. Handlers return it to choose the code a
// caller sees; any other error a handler returns becomes [CodeInternal].
func NewError(code Code, err error) *Error { return apierror.NewError(code, err) }

// Errorf builds an [Error] from a format string.
func Errorf(code Code, format string, args ...any) *Error {
	return apierror.Errorf(code, format, args...)
}

// CodeOf returns the code of err: the code of the first [*Error] in its
// chain, deadline_exceeded or canceled for context errors, internal for
// anything else, and "" for nil.
func CodeOf(err error) Code { return apierror.CodeOf(err) }

// contextError is the error of a request that ended because its context
// did, with fact (when not nil) beside it; see [apierror.FromContext].
func contextError(ctx context.Context, fact error) *Error { return apierror.FromContext(ctx, fact) }

// asError converts any error into an [*Error], keeping the code of one
// already in the chain.
func asError(err error) *Error { return apierror.As(err) }

// wireError is the JSON shape of an error on the wire.
type wireError = apierror.Wire

// toWire returns e's wire form.
func toWire(e *Error) wireError { return apierror.ToWire(e) }

// Code is an error code: a closed set, each with exactly one HTTP status, the
// same in every contract version. Code.HTTPStatus returns the status a code
// travels under (unknown codes are internal errors, 500); Code.Valid
// reports whether a code is one of those defined here. Like [Error], it is
// an alias of framework/internal/apierror's type, so that jsonwire and the
// other packages the framework imports give the same codes.
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
