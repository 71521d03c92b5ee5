package runtime

import (
	"errors"
	"fmt"
	"time"
)

// The kinds of recoverable error (SPEC §8): the values of a call's ToolError.Kind, for the host and for the LLM.
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
	// KindUnknownFunction is a call to a function the capability does not offer: the LLM named a function that
	// does not exist (or that the capability leaves out). The error's hint lists the ones it can call.
	KindUnknownFunction = "unknown_function"
	// KindAuthorizationRequired is a call to a remote server that needs an end user's authorization first (an
	// OAuth grant the host's mcpauth.Authorizer asked the user for): the call may be made again once the user has
	// authorized. Nothing remembers it: the next call asks again.
	KindAuthorizationRequired = "authorization_required"
	// KindAccessDenied is a call to a remote server that the user (or the server's authorization server) refused
	// access to, or that the server still refused after the authorizations it asked for.
	KindAccessDenied = "access_denied"
)

// ErrUnrecoverable marks a failure after which the task cannot go on (SPEC §7.1): invalid configuration found at
// run time, an unreachable endpoint, a session that cannot be created. The library reports it and does not close
// the task; the host ends it. The root package's tool.ErrUnrecoverable is the same
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
	// Retryable says the same call may succeed later; RetryAfter, when > 0, says when. For an OutcomeUnknown
	// error the root package clears it unless the action is marked idempotent or read-only.
	Retryable  bool
	RetryAfter time.Duration
	// OutcomeUnknown says the request may have reached the server and no reply tells what it did: the reply was
	// lost, came too late or could not be read. Sending the call again could run it twice.
	OutcomeUnknown bool
	// Hint tells the LLM what to do before calling again, "" when nothing in particular.
	Hint string
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

// OutcomeUnknownHint is the hint of an OutcomeUnknown error of an action that is not idempotent.
const OutcomeUnknownHint = "the call may have taken effect: check the state it changes before calling again"

// LostReply returns an *Error of kind for a call whose request may have reached the server but whose reply was
// lost, late or unreadable: the message, formatted, is followed by "; the outcome is unknown". It is
// OutcomeUnknown and retryable; the root package makes it not retryable, with OutcomeUnknownHint, for an
// action not marked idempotent or read-only (Call.Idempotent).
func LostReply(kind, format string, args ...any) *Error {
	e := Errorf(kind, format, args...)
	e.Message += "; the outcome is unknown: the server may have run the call"
	e.Retryable, e.OutcomeUnknown = true, true
	return e
}

// Error returns "kind: message".
func (e *Error) Error() string { return e.Kind + ": " + e.Message }

// Fail returns a Result carrying e.
func Fail(e *Error) *Result { return &Result{Error: e} }
