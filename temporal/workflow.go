package temporaltool

import (
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// This file is the workflow side: it calls the workflow package only, never the library, a clock or the network,
// so that a workflow replays (the replay tests check it on recorded histories).

// DefaultActivityOptions are the options the helpers' activities need, for workflow.WithActivityOptions: an
// attempt bounded above the library's default call timeout (30 s) so that its timeout result comes first; a
// heartbeat timeout of 10 s, so a dead worker's call is retried within seconds, not at StartToClose (Invoke
// heartbeats every third of it); retries with backoff for 10 minutes, and never for the non-retryable types.
// Raise StartToCloseTimeout for actions with a longer timeout.
func DefaultActivityOptions() workflow.ActivityOptions {
	return workflow.ActivityOptions{
		StartToCloseTimeout:    2 * time.Minute,
		ScheduleToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:       10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			NonRetryableErrorTypes: []string{ErrorUnrecoverable, ErrorTaskGone, ErrorInvalid},
		},
	}
}

// Start runs the StartTask activity with ctx's activity options.
func Start(ctx workflow.Context, in StartInput) (TaskInfo, error) {
	in.V = Version
	var info TaskInfo
	err := workflow.ExecuteActivity(ctx, ActivityStartTask, in).Get(ctx, &info)
	return info, err
}

// Functions runs the Functions activity: the task's functions now, for a workflow that wants them again (after
// ContinueAsNew, say).
func Functions(ctx workflow.Context, t TaskRef) (TaskInfo, error) {
	var info TaskInfo
	err := workflow.ExecuteActivity(ctx, ActivityFunctions, t).Get(ctx, &info)
	return info, err
}

// Invoke runs the Invoke activity for c, with c.CallID as its activity ID (unique within a run), so that the
// history, the library's facts and its spans name the call alike. A result the model should read, error or not,
// is the Outcome; the error is the activity's (Ended tells whether it ends the conversation).
func Invoke(ctx workflow.Context, c Call) (Outcome, error) {
	c.V = Version
	o := workflow.GetActivityOptions(ctx)
	o.ActivityID = c.CallID
	var out Outcome
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, o), ActivityInvoke, c).Get(ctx, &out)
	return out, err
}

// Touch runs the Touch activity: the task's event timeouts count from now (a long model turn is activity).
func Touch(ctx workflow.Context, t TaskRef) error {
	return workflow.ExecuteActivity(ctx, ActivityTouch, t).Get(ctx, nil)
}

// Close runs the CloseTask activity on a context disconnected from ctx, so that it runs when the workflow was
// cancelled too: defer it right after Start.
func Close(ctx workflow.Context, t TaskRef) error {
	ctx, _ = workflow.NewDisconnectedContext(ctx)
	return workflow.ExecuteActivity(ctx, ActivityCloseTask, t).Get(ctx, nil)
}

// Events receives the activations signalled to the workflow (SignalName), each Activation.ID once. Not safe for
// use by more than one workflow coroutine at a time.
type Events struct {
	ch   workflow.ReceiveChannel
	seen map[string]bool
}

// NewEvents returns the workflow's Events. seen are the IDs already taken, for a run that ContinueAsNew began
// (Events.Seen of the run before).
func NewEvents(ctx workflow.Context, seen ...string) *Events {
	e := &Events{ch: workflow.GetSignalChannel(ctx, SignalName), seen: map[string]bool{}}
	for _, id := range seen {
		e.seen[id] = true
	}
	return e
}

// Next waits for the next activation whose ID it has not returned, or for a durable timer of timeout (the event's
// timeout, TaskInfo.EventTimeouts): false when the timer fired first (or ctx was cancelled). A timeout of 0
// waits without a timer. Duplicates arriving meanwhile are dropped and do not restart the timer.
func (e *Events) Next(ctx workflow.Context, timeout time.Duration) (Activation, bool) {
	tctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	var timer workflow.Future
	if timeout > 0 {
		timer = workflow.NewTimer(tctx, timeout)
	}
	for {
		var a Activation
		fired := false
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(e.ch, func(c workflow.ReceiveChannel, more bool) { c.Receive(ctx, &a) })
		if timer != nil {
			sel.AddFuture(timer, func(workflow.Future) { fired = true })
		}
		sel.Select(ctx)
		if fired || ctx.Err() != nil {
			return Activation{}, false
		}
		if !e.seen[a.ID] {
			e.seen[a.ID] = true
			return a, true
		}
	}
}

// Pending takes the activations already signalled and not yet taken, without waiting: for a workflow that
// checks for events between model turns.
func (e *Events) Pending() []Activation {
	var out []Activation
	for {
		var a Activation
		if !e.ch.ReceiveAsync(&a) {
			return out
		}
		if !e.seen[a.ID] {
			e.seen[a.ID] = true
			out = append(out, a)
		}
	}
}

// Seen returns the IDs taken so far, sorted: carry them into ContinueAsNew.
func (e *Events) Seen() []string {
	ids := make([]string, 0, len(e.seen))
	for id := range e.seen {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
