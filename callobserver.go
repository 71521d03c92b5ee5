package tool

import "context"

// CallObserver is an optional interface of an Observer (WithObserver). When the observer implements it, a task
// calls StartCall as each call begins, before its arguments are checked, and runs the call with the context it
// returns: the Approver, the backend and its outbound requests (an HTTP client instrumented with otelhttp, given
// with WithHTTPClient, finds the observer's span there), and the call's facts — tool.approval.requested,
// tool.approval.decided, tool.started, and exactly one of tool.result, tool.failed or tool.cancelled, which ends
// the call. The returned context must derive from ctx; a tracer puts its span in it (package oteltool does).
// StartCall must not block for long.
type CallObserver interface {
	StartCall(ctx context.Context, c CallStart) context.Context
}

// CallStart describes a call that begins.
type CallStart struct {
	Tool, TaskID, CallID string
	// Action is the manifest action ("" for a function the capability does not offer), Function the LLM-facing
	// name, Description the action's description.
	Action, Function, Description string
}

// startCall gives a CallObserver the call's context.
func (t *Task) startCall(ctx context.Context, a *action, id, function string) context.Context {
	co, ok := t.tool.opts.observer.(CallObserver)
	if !ok {
		return ctx
	}
	return co.StartCall(ctx, CallStart{Tool: t.tool.Name(), TaskID: t.id, CallID: id, Action: a.def.Name,
		Function: function, Description: a.def.Description})
}
