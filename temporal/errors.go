package temporaltool

import (
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	tool "github.com/commonagents-go/tool"
)

// The types of the application errors the activities return. DefaultActivityOptions lists the non-retryable ones
// (all but ErrorRetryAfter) as non-retryable too.
const (
	// ErrorUnrecoverable: the library's ErrUnrecoverable (SPEC §7.1). End the conversation, tell the user, close
	// the task.
	ErrorUnrecoverable = "commonagents.tool.Unrecoverable"
	// ErrorTaskGone: the task is not in the Store (closed, expired, never made, or declined by the Config).
	ErrorTaskGone = "commonagents.tool.TaskGone"
	// ErrorInvalid: the input cannot be served by any attempt (an unknown tool, a newer V, a task
	// configuration NewTask refuses).
	ErrorInvalid = "commonagents.tool.Invalid"
	// ErrorRetryAfter is the retryable error of an idempotent call the server refused with a Retry-After: its
	// NextRetryDelay is the server's.
	ErrorRetryAfter = "commonagents.tool.RetryAfter"
)

// Ended reports whether err, returned by Invoke, Start, Touch or Functions in a workflow, ends the conversation:
// the task is gone or cannot go on (ErrorUnrecoverable, ErrorTaskGone). Close the task (a deferred Close does)
// and tell the user.
func Ended(err error) bool {
	var app *temporal.ApplicationError
	if !errors.As(err, &app) {
		return false
	}
	return app.Type() == ErrorUnrecoverable || app.Type() == ErrorTaskGone
}

// gone wraps the library's err for a task that is not there, or nil when err is something else.
func gone(err error) error {
	if errors.Is(err, tool.ErrNotFound) || errors.Is(err, tool.ErrTaskExpired) || errors.Is(err, tool.ErrClosed) {
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrorTaskGone, nil)
	}
	return nil
}

// fatal maps an error of the library that no retry can mend to its non-retryable application error; other
// errors (a Store outage, an ended ctx) are returned as they are, retryable.
func fatal(err error) error {
	if err == nil {
		return nil
	}
	if g := gone(err); g != nil {
		return g
	}
	if errors.Is(err, tool.ErrUnrecoverable) {
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrorUnrecoverable, nil)
	}
	return err
}

// invalid is a non-retryable ErrorInvalid.
func invalid(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), ErrorInvalid, nil)
}

// checkVersion refuses a V this package does not know.
func checkVersion(v int) error {
	if v < 0 || v > Version {
		return invalid("temporaltool: input version %d, this worker knows up to %d", v, Version)
	}
	return nil
}
