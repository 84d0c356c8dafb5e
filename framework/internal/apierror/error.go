// Package apierror holds lockstep's one error type and its closed set of
// codes. The framework exposes them as framework.Error and framework.Code
// (type aliases of the types here); they live in this leaf package, which
// imports nothing of lockstep, so that packages the framework imports, such
// as jsonwire, can return the same error without importing the framework.
package apierror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Error is the one error type of lockstep: a code, a message, optional
// structured details, and the cause. On the wire it is
// {"code","message","details"}.
type Error struct {
	code    Code
	message string
	details json.RawMessage
	cause   error
}

// NewError wraps err with a code. Handlers return it to choose the code a
// caller sees; any other error a handler returns becomes [CodeInternal].
func NewError(code Code, err error) *Error {
	e := &Error{code: code, cause: err}
	if err != nil {
		e.message = err.Error()
	}
	return e
}

// Errorf builds an [Error] from a format string.
func Errorf(code Code, format string, args ...any) *Error {
	return NewError(code, fmt.Errorf(format, args...))
}

// Code returns the error's code.
func (e *Error) Code() Code { return e.code }

// Message returns the human-readable message.
func (e *Error) Message() string { return e.message }

// Details returns the structured details as raw JSON, or nil.
func (e *Error) Details() json.RawMessage { return e.details }

// WithDetails attaches structured details, marshalled to JSON. It returns e
// for chaining; a value that does not marshal is reported in the message.
func (e *Error) WithDetails(v any) *Error {
	b, err := json.Marshal(v)
	if err != nil {
		e.message += fmt.Sprintf(" (details did not encode: %v)", err)
		return e
	}
	e.details = b
	return e
}

// Error implements error.
func (e *Error) Error() string {
	if e.message == "" {
		return string(e.code)
	}
	return string(e.code) + ": " + e.message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.cause }

// CodeOf returns the code of err: the code of the first [*Error] in its
// chain, deadline_exceeded or canceled for context errors, internal for
// anything else, and "" for nil.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.code
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return CodeDeadlineExceeded
	case errors.Is(err, context.Canceled):
		return CodeCanceled
	}
	return CodeInternal
}

// FromContext is the error of a request that ended because its context
// did: coded deadline_exceeded or canceled, and saying only that, with the
// context's error as its cause, so that errors.Is(err, ctx.Err()) holds as
// Go's conventions ask. fact, when not nil, is what else held when the
// request ended (for a call blocked without a compatible peer, the state of
// its peers): errors.As and errors.Is reach it, but the message does not
// speak of it, since it is not what ended the request.
func FromContext(ctx context.Context, fact error) *Error {
	cause := ctx.Err()
	e := NewError(CodeOf(cause), cause)
	if fact != nil {
		e.cause = withFact{err: cause, fact: fact}
	}
	return e
}

// withFact is an error that reads as err and unwraps to err and fact.
type withFact struct{ err, fact error }

func (w withFact) Error() string   { return w.err.Error() }
func (w withFact) Unwrap() []error { return []error{w.err, w.fact} }

// As converts any error into an [*Error], keeping the code of one already
// in the chain.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return NewError(CodeOf(err), err)
}

// Wire is the JSON shape of an error on the wire.
type Wire struct {
	Code    Code            `json:"code"`
	Message string          `json:"message"`
	Details json.RawMessage `json:"details,omitempty"`
}

// ToWire returns e's wire form. It is a function, not a method, so that
// the public framework.Error gains no method users could call.
func ToWire(e *Error) Wire {
	return Wire{Code: e.code, Message: e.message, Details: e.details}
}

// ToError is the error a wire form carries; a code this side does not know
// is read as internal.
func (w Wire) ToError() *Error {
	code := w.Code
	if !code.Valid() {
		code = CodeInternal
	}
	return &Error{code: code, message: w.Message, details: w.Details}
}
