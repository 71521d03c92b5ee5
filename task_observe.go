package tool

import (
	"context"

	"github.com/commonagents-go/tool/facts"
)

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
	t.logger().Warn("store operation failed", "tool", t.tool.Name(), "task", t.id, "operation", op,
		"record", record, "error", err)
	t.observeExternal(ctx, facts.StoreFailed, map[string]any{"operation": op, "record": record, "error": err.Error()})
}
