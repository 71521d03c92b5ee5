package tool

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commonagents-go/tool/events"
)

// taskEvents is the event side of a task (SPEC §9): which events its capability includes and their timeouts,
// activity and expiry (event_timeouts.go), interruption (task_interrupt.go), delivery ids (event_dedupe.go) and the background
// receivers (event_background.go). It reaches its task only through eventSeam; the task reaches it through the
// methods in this file and those the files above name.
type taskEvents struct {
	seam eventSeam
	tool *Tool           // read only: the events, the clock, the limits, the Store
	ctx  context.Context // the task's: ends when it closes

	included []bool          // by event index
	timeouts []time.Duration // by event index; 0 = none
	anyLimit bool            // some event has a timeout
	// expiresAt is the task's end (TaskConfig.ExpiresAt, else the stored one; zero: none), set before the task
	// starts and read only afterwards.
	expiresAt time.Time

	interrupted  atomic.Bool
	lastActivity atomic.Int64 // unix nanoseconds
	mu           sync.Mutex   // guards expired, lastActivity updates when anyLimit, and cancels
	expired      []bool       // by event index; stays set until Resume
	cancels      map[uint64]context.CancelCauseFunc
	cancelSeq    uint64
	saveMu       sync.Mutex // serialises persistence, so the last write holds the latest state
	// savedActivity is the last activity (unix ns) written to the Store.
	savedActivity atomic.Int64
	// lastStored is the event state this process last wrote or read (under saveMu): what Detach need not write again.
	lastStored []byte

	workers workers
	dedupe  dedupeLog
}

// eventSeam is what the event side of a task needs from the task.
type eventSeam interface {
	ID() string
	// observe reports a fact with the task's secrets masked.
	observe(ctx context.Context, fact, callID string, data map[string]any)
	// stateKey is the Store key of part of the task's state.
	stateKey(part string) string
	// storeContext bounds a Store operation that a caller giving up must not cut short.
	storeContext(ctx context.Context) (context.Context, context.CancelFunc)
	// storeFailed reports a failed Store operation.
	storeFailed(ctx context.Context, op, record string, err error)
	// host is what event i's background worker gets from the task.
	host(i int) *events.Host
}

// init derives the task's view of the tool's events from its capability; activity starts now. ctx is the
// task's.
func (e *taskEvents) init(seam eventSeam, t *Tool, ctx context.Context, cfg TaskConfig) {
	c := cfg.Capability
	e.seam, e.tool, e.ctx, e.expiresAt = seam, t, ctx, cfg.ExpiresAt
	e.included = make([]bool, len(t.events))
	e.timeouts = make([]time.Duration, len(t.events))
	e.expired = make([]bool, len(t.events))
	for i, ev := range t.events {
		e.included[i] = c.Include == nil || slices.Contains(c.Include, ev.def.Name)
		e.timeouts[i] = effectiveTimeout(c.EventTimeout, ev, t.opts.limits.MaxEventTimeout)
		e.anyLimit = e.anyLimit || e.timeouts[i] > 0
	}
	e.lastActivity.Store(t.opts.clock.Now().UnixNano())
}

// stored reports whether the task keeps an events record: for its timeouts or its expiry.
func (e *taskEvents) stored() bool { return e.anyLimit || !e.expiresAt.IsZero() }

// started runs once the task is in place (restored, persisted): the task's activity so far counts as saved,
// and the background events start.
func (e *taskEvents) started() {
	if e.anyLimit {
		e.savedActivity.Store(e.lastActivity.Load())
	}
	e.startWorkers()
}

// admit is the event side's verdict on a payload for event i: a discard reason and detail when the capability
// excludes the event, the task is interrupted or the event expired; else "".
func (e *taskEvents) admit(i int) (reason, detail string) {
	switch {
	case !e.included[i]:
		return ReasonExcluded, "the capability does not include this event"
	case e.interrupted.Load():
		return ReasonInterrupted, ""
	case e.expiredAt(i):
		return ReasonExpired, fmt.Sprintf("no task activity for longer than the event's timeout (%s)", e.timeouts[i])
	}
	return "", ""
}

// idleReason is why a restored task does not run event i's background worker (a Retirer's reason), or "" when
// it runs it.
func (e *taskEvents) idleReason(i int) string {
	switch {
	case !e.included[i]:
		return "excluded"
	case e.expired[i]:
		return events.StopExpired
	case e.interrupted.Load():
		return events.StopInterrupted
	}
	return ""
}

// restore takes over the event state an earlier process stored.
func (e *taskEvents) restore(s storedEvents) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.interrupted.Store(s.Interrupted)
	for i, ev := range e.tool.events {
		e.expired[i] = slices.Contains(s.Expired, ev.def.Name)
	}
	if e.expiresAt.IsZero() {
		e.expiresAt = s.ExpiresAt
	}
	if !s.LastActivityAt.IsZero() {
		e.lastActivity.Store(s.LastActivityAt.UnixNano())
	}
	e.expireLocked(e.tool.opts.clock.Now().UnixNano()) // the time the earlier process was gone counts
}
