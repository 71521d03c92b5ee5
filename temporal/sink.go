package temporaltool

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	tool "github.com/commonagents-go/tool"
)

// SignalName is the name of the signal a SignalSink sends, with an Activation.
const SignalName = "commonagents.tool.activation"

// SinkOptions configure SignalSink. The zero value signals the workflow whose ID is the task ID.
type SinkOptions struct {
	// WorkflowID names the workflow of an activation (default: its TaskID).
	WorkflowID func(tool.Activation) string
	// Start, when set, makes the Sink use SignalWithStart: an activation for a task whose workflow is not running
	// starts one, with Start's options (its ID is WorkflowID's), workflow and arguments. That workflow should
	// call Start with MustExist, so that a webhook racing Close makes no fresh task.
	Start *StartOptions
	// Ended is told of an activation for a workflow that is not running when Start is nil: the conversation
	// ended (or was terminated) and the activation is dropped. The Sink accepts it, so the sender is answered
	// 2xx and does not retry what no retry can deliver. The task is still stored (a terminated workflow skipped
	// its Close): close it once the webhook is answered (Router.CloseTask from another goroutine: inside Ended
	// the task is in the middle of its delivery), or leave it to its ExpiresAt and Router.SweepExpired. ctx is
	// the webhook's.
	Ended func(ctx context.Context, a tool.Activation)
}

// StartOptions are the workflow a SignalSink starts for an activation (SinkOptions.Start).
type StartOptions struct {
	Options  client.StartWorkflowOptions
	Workflow any
	// Args are the workflow's arguments for the activation.
	Args func(tool.Activation) []any
}

// SignalSink returns a tool.Sink that signals an activation (SignalName, an Activation: no Payload, no
// Parameters) to its workflow. It accepts once the Temporal server has stored the signal: the Router then
// answers the webhook 2xx. A failure to reach the server is an error, so the webhook is answered 503 and the
// sender retries; a retried delivery that already signalled is deduplicated by the Router's delivery-id window
// and, past it, by Events in the workflow (by Activation.ID).
func SignalSink(c client.Client, opts SinkOptions) tool.Sink {
	return tool.SinkFunc(func(ctx context.Context, ta tool.Activation) error {
		id := ta.TaskID
		if opts.WorkflowID != nil {
			id = opts.WorkflowID(ta)
		}
		a := Activation{V: Version, ID: ta.ID, TaskID: ta.TaskID, Tool: ta.Tool, Event: ta.Event,
			Message: ta.Message, DeliveryID: ta.DeliveryID, ReceivedAt: ta.ReceivedAt}
		if s := opts.Start; s != nil {
			o := s.Options
			o.ID = id
			var args []any
			if s.Args != nil {
				args = s.Args(ta)
			}
			_, err := c.SignalWithStartWorkflow(ctx, id, SignalName, a, o, s.Workflow, args...)
			return err
		}
		err := c.SignalWorkflow(ctx, id, "", SignalName, a)
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			if opts.Ended != nil {
				opts.Ended(ctx, ta)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("temporaltool: signal workflow %s: %w", id, err)
		}
		return nil
	})
}
