package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commonagents-go/tool/facts"
)

// eventState is a task's subscription state (SPEC §9.5): which events the capability includes, their effective
// timeouts, which have expired, whether the task is interrupted, and the calls an interrupt cancels.
type eventState struct {
	included []bool          // by event index
	timeouts []time.Duration // by event index; 0 = none
	anyLimit bool            // some event has a timeout

	interrupted atomic.Bool
	mu          sync.Mutex // guards expired, lastActivity updates when anyLimit, and cancels
	expired     []bool     // by event index; stays set until Resume
	cancels     map[uint64]context.CancelCauseFunc
	cancelSeq   uint64
	saveMu      sync.Mutex // serialises persistence, so the last write holds the latest state
	// savedActivity is the last activity (unix ns) written to the Store.
	savedActivity atomic.Int64
}

// init derives the task's view of the tool's events from its capability.
func (s *eventState) init(t *Tool, c Capability) {
	s.included = make([]bool, len(t.events))
	s.timeouts = make([]time.Duration, len(t.events))
	s.expired = make([]bool, len(t.events))
	for i, ev := range t.events {
		s.included[i] = c.Include == nil || slices.Contains(c.Include, ev.def.Name)
		s.timeouts[i] = effectiveTimeout(c.EventTimeout, ev, t.opts.limits.MaxEventTimeout)
		s.anyLimit = s.anyLimit || s.timeouts[i] > 0
	}
}

// effectiveTimeout is SPEC §9.5's clamp(capability ?? event timeout ?? none, max = the smaller of the event's
// max_timeout and the host's cap). 0 means none.
func effectiveTimeout(requested time.Duration, ev *event, hostMax time.Duration) time.Duration {
	d := requested
	if d <= 0 {
		d = ev.timeout
	}
	for _, max := range []time.Duration{ev.maxTimeout, hostMax} {
		if max > 0 && (d <= 0 || d > max) {
			d = max
		}
	}
	return d
}

// Touch records task activity (SPEC §9.5): any processing step of the task the host runs (LLM turns, input),
// in addition to Invoke and activations, which record it themselves. An event whose timeout passed before this
// activity stays expired until Resume.
func (t *Task) Touch() { t.touch() }

func (t *Task) touch() {
	now := t.tool.opts.clock.Now().UnixNano()
	if !t.events.anyLimit {
		t.lastActivity.Store(now)
		return
	}
	t.events.mu.Lock()
	newly := t.expireLocked(now)
	t.lastActivity.Store(now)
	t.events.mu.Unlock()
	t.expiredNow(newly)
	// Persist the activity now and then, so that a task resumed after a crash does not time out early.
	if saved := t.events.savedActivity.Load(); now-saved > int64(ActivitySaveInterval) &&
		t.events.savedActivity.CompareAndSwap(saved, now) {
		_ = t.saveEvents(t.ctx)
	}
}

// ActivitySaveInterval is how often, at most, task activity is written to the Store for events with a timeout: a
// task resumed after a crash counts its idle time from at most this much before the last activity.
const ActivitySaveInterval = time.Minute

// expired reports whether event i has expired, expiring it (and any other event) when its timeout has passed.
func (t *Task) expired(i int) bool {
	if t.events.timeouts[i] <= 0 {
		return false
	}
	t.events.mu.Lock()
	newly := t.expireLocked(t.tool.opts.clock.Now().UnixNano())
	exp := t.events.expired[i]
	t.events.mu.Unlock()
	t.expiredNow(newly)
	return exp
}

// expireLocked marks the events whose timeout has passed at now and returns their indexes.
func (t *Task) expireLocked(now int64) []int {
	idle := time.Duration(now - t.lastActivity.Load())
	var newly []int
	for i, d := range t.events.timeouts {
		if d > 0 && !t.events.expired[i] && idle > d {
			t.events.expired[i] = true
			newly = append(newly, i)
		}
	}
	return newly
}

// expiredNow reports newly expired events and persists the state.
func (t *Task) expiredNow(newly []int) {
	if len(newly) == 0 {
		return
	}
	ctx := t.ctx
	for _, i := range newly {
		t.observe(ctx, facts.SubscriptionExpired, "", map[string]any{"event": t.tool.events[i].def.Name,
			"timeout": t.events.timeouts[i].String()})
	}
	t.saveEvents(ctx)
	t.stopExpired(newly)
}

// storedEvents is the "events" part of the task state.
type storedEvents struct {
	Interrupted    bool      `json:"interrupted,omitempty"`
	Expired        []string  `json:"expired,omitempty"`
	LastActivityAt time.Time `json:"last_activity_at"`
}

// saveEvents persists the subscription state.
func (t *Task) saveEvents(ctx context.Context) error {
	t.events.saveMu.Lock()
	defer t.events.saveMu.Unlock()
	b, err := t.eventsJSON()
	if err == nil {
		ctx, cancel := t.storeContext(ctx)
		defer cancel()
		err = t.tool.opts.store.Put(ctx, t.stateKey("events"), b)
	}
	if err != nil {
		err = fmt.Errorf("tool: store event state of task %s: %w", t.id, err)
		t.storeFailed(ctx, "write", recordEvents, err)
	}
	return err
}

// eventsJSON is the event state as stored: the interrupted flag, the expired events and the last activity.
func (t *Task) eventsJSON() ([]byte, error) {
	t.events.mu.Lock()
	s := storedEvents{Interrupted: t.events.interrupted.Load(),
		LastActivityAt: time.Unix(0, t.lastActivity.Load()).UTC()}
	for i, exp := range t.events.expired {
		if exp {
			s.Expired = append(s.Expired, t.tool.events[i].def.Name)
		}
	}
	t.events.mu.Unlock()
	return json.Marshal(s)
}
