package temporaltool

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	tool "github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/runtime"
)

// progress is the heartbeat detail of Invoke. NotSentThrough n says that attempts 1..n of the call sent nothing:
// attempt n wrote it, before returning an error, having found attempts 1..n-1 recorded the same way and having
// failed before its send. An attempt that reached the send never writes it, so a stale or lost detail can only
// make a later attempt answer outcome_unknown, never send twice.
type progress struct {
	NotSentThrough int32 `json:"not_sent_through"`
}

// Invoke runs one function call in the task c.Task names, lent through the Router. Its Outcome is every result
// the library gives, IsError ones included. Errors: ErrorTaskGone, ErrorUnrecoverable, ErrorInvalid
// (non-retryable); an error carrying NextRetryDelay for an idempotent call the server refused with Retry-After;
// the activity's ctx's error, or a Store outage, retryable.
//
// The attempt rule: an attempt after the first of a call whose action is neither idempotent nor read-only does
// not send, unless every earlier attempt recorded that it sent nothing; it answers a recoverable
// outcome_unknown error with the hint to check the state the call changes.
//
// With a HeartbeatTimeout, Invoke heartbeats every third of it while the call runs; a cancellation Temporal
// delivers in a heartbeat's reply cancels the call.
func (a *Activities) Invoke(ctx context.Context, c Call) (Outcome, error) {
	if err := checkVersion(c.V); err != nil {
		return Outcome{}, err
	}
	info := activity.GetInfo(ctx)
	t, release, err := a.lend(ctx, c.Task)
	if err != nil {
		return Outcome{}, a.unsent(ctx, info.Attempt, err)
	}
	defer release()
	entry, known := catalogEntry(t, c.Function)
	retrySafe := !known || entry.IsIdempotent || entry.IsReadOnly
	if !retrySafe && info.Attempt > 1 && !sentNothingBefore(ctx, info.Attempt) {
		return a.outcome(unknownResult(c, info.Attempt), info.Attempt), nil
	}
	stop := heartbeat(ctx, info.HeartbeatTimeout)
	res, err := t.InvokeFunction(tool.ContextWithCallID(ctx, c.CallID), c.Function, c.Args)
	stop()
	if err != nil {
		if ctx.Err() != nil {
			return Outcome{}, fmt.Errorf("temporaltool: call %s: %w", c.CallID, ctx.Err())
		}
		return Outcome{}, fatal(err)
	}
	if e := res.Error; res.IsError && e != nil && retrySafe && e.Retryable && !e.OutcomeUnknown && e.RetryAfter > 0 &&
		info.Attempt < a.retryAfterAttempts() {
		return Outcome{}, temporal.NewApplicationErrorWithOptions(e.Error(), ErrorRetryAfter,
			temporal.ApplicationErrorOptions{NextRetryDelay: e.RetryAfter})
	}
	return a.outcome(res, info.Attempt), nil
}

// unsent returns err, an error of an attempt that sent nothing, after recording so in a heartbeat when the
// attempts before it sent nothing either: the next attempt may then send.
func (a *Activities) unsent(ctx context.Context, attempt int32, err error) error {
	if attempt == 1 || sentNothingBefore(ctx, attempt) {
		activity.RecordHeartbeat(ctx, progress{NotSentThrough: attempt})
	}
	return err
}

// sentNothingBefore reports whether the heartbeat details say that attempts 1..attempt-1 sent nothing.
func sentNothingBefore(ctx context.Context, attempt int32) bool {
	var p progress
	if !activity.HasHeartbeatDetails(ctx) || activity.GetHeartbeatDetails(ctx, &p) != nil {
		return false
	}
	return p.NotSentThrough == attempt-1
}

// heartbeat records a heartbeat every third of timeout until stop is called; a zero timeout does nothing.
// Its details are the zero progress: an attempt that may send records nothing that lets a later one send.
func heartbeat(ctx context.Context, timeout time.Duration) (stop func()) {
	if timeout <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		tick := time.NewTicker(timeout / 3)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				activity.RecordHeartbeat(ctx, progress{})
			}
		}
	}()
	return func() { close(done); <-ended }
}

// catalogEntry is the catalog entry of the function name in t's capability.
func catalogEntry(t *tool.Task, name string) (tool.CatalogEntry, bool) {
	for _, e := range t.Catalog() {
		if e.Function == name {
			return e, true
		}
	}
	return tool.CatalogEntry{}, false
}

// unknownHint is the hint of the outcome_unknown the attempt rule answers.
const unknownHint = "an earlier attempt of this call was cut off (its worker stopped) and may have taken effect: " +
	"check the state it changes before calling again"

// unknownResult is the result of an attempt the attempt rule keeps from sending.
func unknownResult(c Call, attempt int32) *tool.Result {
	e := &tool.ToolError{Kind: runtime.KindUnavailable, OutcomeUnknown: true,
		Message: fmt.Sprintf("attempt %d of the call was not sent because an earlier attempt may have reached the "+
			"server: the outcome is unknown", attempt),
		Hint: &tool.RetryHint{Message: unknownHint}}
	out, _ := json.Marshal(map[string]any{"error": e})
	return &tool.Result{CallID: c.CallID, Function: c.Function, IsError: true, Error: e, OutputJSON: out,
		OutputBytes: len(out)}
}

// outcome converts res, bounding its text.
func (a *Activities) outcome(res *tool.Result, attempt int32) Outcome {
	o := Outcome{V: Version, CallID: res.CallID, Function: res.Function, Text: res.Text(), IsError: res.IsError,
		OutputBytes: res.OutputBytes, Omitted: res.Omitted, OmittedReason: res.OmittedReason, Attempt: attempt}
	if e := res.Error; e != nil {
		o.Error = &ErrorInfo{Kind: e.Kind, Message: e.Message, Retryable: e.Retryable, RetryAfter: e.RetryAfter,
			OutcomeUnknown: e.OutcomeUnknown}
		if e.Hint != nil {
			o.Error.Hint = e.Hint.Message
		}
	}
	if max := a.maxResultBytes(); len(o.Text) > max {
		o.Omitted = true
		o.OmittedReason = fmt.Sprintf("the output is %d bytes, over the workflow's result bound of %d bytes",
			len(o.Text), max)
		b, _ := json.Marshal(map[string]string{"omitted": o.OmittedReason})
		o.Text = string(b)
	}
	return o
}

func (a *Activities) maxResultBytes() int {
	if a.MaxResultBytes > 0 {
		return a.MaxResultBytes
	}
	return DefaultMaxResultBytes
}

func (a *Activities) retryAfterAttempts() int32 {
	if a.RetryAfterAttempts > 0 {
		return a.RetryAfterAttempts
	}
	return DefaultRetryAfterAttempts
}
