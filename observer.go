package tool

import (
	"context"
	"time"

	"github.com/commonagents-go/tool/facts"
)

// Observer receives lifecycle facts (SPEC §11). Observe must not block for long.
type Observer interface {
	Observe(ctx context.Context, f Fact)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(ctx context.Context, f Fact)

// Observe calls f.
func (f ObserverFunc) Observe(ctx context.Context, fact Fact) { f(ctx, fact) }

// Fact is one lifecycle fact, such as "tool.catalog.resolved" or "tool.result". Package facts lists every name
// the library reports, as constants, with the keys of each fact's Data.
type Fact struct {
	Name   string
	Tool   string
	TaskID string
	CallID string
	Seq    uint64
	Time   time.Time
	// Data carries the fact's details; argument values in it are redacted.
	Data map[string]any
}

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

// The kinds of record a store.failed fact names (Fact.Data["record"]).
const (
	recordAllowList = "allow_list"  // the task's allow list
	recordDelivery  = "delivery_id" // a delivery id's claim or record (SPEC §9.2)
	recordEvents    = "event_state" // interrupted flag, expired events, last activity
	recordReceiver  = "receiver"    // a subscription's channels or a poll's watermark and seen items
	recordBackend   = "backend"     // what an action backend keeps (stateful_session's sessions)
	recordTask      = "task"        // the task's state as a whole (listing, deletion at Close)
	recordLease     = "lease"       // a background event's lease
	recordRoutes    = "routes"      // the task's routes and generation in the routing index (store mode)
	recordExpiry    = "expiry"      // the task's record in the Store's expiry index (store mode)
)

// storeFailed reports a Store operation that failed: a log line, and a "store.failed" fact whose data names the
// operation (get, put, claim, ...), the kind of record and the error — never a key's value.
func (t *Task) storeFailed(ctx context.Context, op, record string, err error) {
	t.tool.opts.logger.Warn("store operation failed", "tool", t.tool.Name(), "task", t.id, "operation", op,
		"record", record, "error", err)
	t.observe(ctx, facts.StoreFailed, "", map[string]any{"operation": op, "record": record, "error": err.Error()})
}
