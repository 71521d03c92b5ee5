package runtime

import (
	"errors"
	"fmt"
	"time"
)

// The kinds of recoverable error (SPEC §8).
const (
	KindInvalidArguments  = "invalid_arguments"
	KindMissingFields     = "missing_fields"
	KindInvalidRequest    = "invalid_request"
	KindUnavailable       = "unavailable"
	KindRateLimited       = "rate_limited"
	KindTimeout           = "timeout"
	KindResultTooLarge    = "result_too_large"
	KindMalformedResponse = "malformed_response"
	KindToolError         = "tool_error"
	KindDenied            = "denied"
	KindInternal          = "internal"
)

// ErrUnrecoverable marks a failure that ends the task (SPEC §7.1): invalid configuration found at run time, an
// unreachable endpoint, a session that cannot be created. The root package's tool.ErrUnrecoverable is the same
// value.
var ErrUnrecoverable = errors.New("tool: unrecoverable")

// Unrecoverable wraps err so that errors.Is(err, ErrUnrecoverable) holds. The message must not carry secrets.
func Unrecoverable(err error) error {
	if err == nil || errors.Is(err, ErrUnrecoverable) {
		return err
	}
	return &unrecoverable{err}
}

type unrecoverable struct{ err error }

func (u *unrecoverable) Error() string   { return u.err.Error() }
func (u *unrecoverable) Unwrap() []error { return []error{u.err, ErrUnrecoverable} }

// Error is a recoverable failure of one call: the LLM sees Message and may correct or retry its call.
type Error struct {
	// Kind is one of the Kind constants.
	Kind string
	// Message is safe for the LLM: no secrets, no stack, no raw bodies.
	Message string
	// Retryable says the same call may succeed later; RetryAfter, when > 0, says when.
	Retryable  bool
	RetryAfter time.Duration
	// Status is the HTTP status that caused the error, 0 when none.
	Status int
	// Cause is the underlying failure, when it is itself worth showing.
	Cause *Error
}

// Errorf returns an *Error of kind with a formatted message. Kinds unavailable, rate_limited and timeout are
// retryable.
func Errorf(kind, format string, args ...any) *Error {
	e := &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
	switch kind {
	case KindUnavailable, KindRateLimited, KindTimeout:
		e.Retryable = true
	}
	return e
}

// Error returns "kind: message".
func (e *Error) Error() string { return e.Kind + ": " + e.Message }

// Fail returns a Result carrying e.
func Fail(e *Error) *Result { return &Result{Error: e} }
