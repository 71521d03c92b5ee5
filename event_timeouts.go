package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/store"
)

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
func (t *Task) Touch() { t.events.touch() }

func (e *taskEvents) touch() { e.touchAt(e.tool.opts.clock.Now()) }

// touchAt is touch for an activity at t (a call's start, read from the clock already).
func (e *taskEvents) touchAt(t time.Time) {
	if e.noteActivity(t) {
		_ = e.save(e.ctx)
	}
}

// noteActivity records an activity at t and reports whether the caller must write the event state now: the
// activity is persisted now and then (at most every activitySaveInterval), so that a task resumed after a crash
// does not time out early. A delivery writes it with its delivery id's record, in one Store call (remember).
func (e *taskEvents) noteActivity(t time.Time) (write bool) {
	now := t.UnixNano()
	if !e.anyLimit {
		e.lastActivity.Store(now)
		return false
	}
	e.mu.Lock()
	newly := e.expireLocked(now)
	e.lastActivity.Store(now)
	e.mu.Unlock()
	e.expiredNow(newly)
	saved := e.savedActivity.Load()
	return now-saved > int64(activitySaveInterval) && e.savedActivity.CompareAndSwap(saved, now)
}

// activitySaveInterval is how often, at most, task activity is written to the Store for events with a timeout: a
// task resumed after a crash counts its idle time from at most this much before the last activity.
const activitySaveInterval = time.Minute

// expiredAt reports whether event i has expired, expiring it (and any other event) when its timeout has passed.
func (e *taskEvents) expiredAt(i int) bool {
	if e.timeouts[i] <= 0 {
		return false
	}
	e.mu.Lock()
	newly := e.expireLocked(e.tool.opts.clock.Now().UnixNano())
	exp := e.expired[i]
	e.mu.Unlock()
	e.expiredNow(newly)
	return exp
}

// expireLocked marks the events whose timeout has passed at now and returns their indexes.
func (e *taskEvents) expireLocked(now int64) []int {
	idle := time.Duration(now - e.lastActivity.Load())
	var newly []int
	for i, d := range e.timeouts {
		if d > 0 && !e.expired[i] && idle > d {
			e.expired[i] = true
			newly = append(newly, i)
		}
	}
	return newly
}

// expiredNow reports newly expired events and persists the state.
func (e *taskEvents) expiredNow(newly []int) {
	if len(newly) == 0 {
		return
	}
	ctx := e.ctx
	for _, i := range newly {
		e.seam.observe(ctx, facts.SubscriptionExpired, "", map[string]any{"event": e.tool.events[i].def.Name,
			"timeout": e.timeouts[i].String()})
	}
	e.save(ctx)
	e.stopExpired(newly)
}

// storedEvents is the "events" part of the task state.
type storedEvents struct {
	Interrupted    bool      `json:"interrupted,omitempty"`
	Expired        []string  `json:"expired,omitempty"`
	LastActivityAt time.Time `json:"last_activity_at"`
	ExpiresAt      time.Time `json:"expires_at,omitzero"` // TaskConfig.ExpiresAt
}

// save persists the event state.
func (e *taskEvents) save(ctx context.Context) error {
	e.saveMu.Lock()
	defer e.saveMu.Unlock()
	b, err := e.marshal()
	if err == nil {
		ctx, cancel := e.seam.storeContext(ctx)
		defer cancel()
		err = e.tool.opts.store.Put(ctx, e.seam.stateKey("events"), b)
		if err == nil {
			e.lastStored = b
		}
	}
	if err != nil {
		err = fmt.Errorf("tool: store event state of task %s: %w", e.seam.ID(), err)
		e.seam.storeFailed(ctx, "write", recordEvents, err)
	}
	return err
}

// saveWith is save with other writes (a delivery id's record) in the same call of a store.BatchStore: one round
// trip for both. A failure is reported for the event state; the caller reports its own writes'.
func (e *taskEvents) saveWith(ctx context.Context, bs store.BatchStore, others ...store.Write) error {
	e.saveMu.Lock()
	defer e.saveMu.Unlock()
	b, err := e.marshal()
	if err != nil {
		err = fmt.Errorf("tool: store event state of task %s: %w", e.seam.ID(), err)
		e.seam.storeFailed(ctx, "write", recordEvents, err)
		return bs.PutBatch(ctx, others) // the others are written all the same
	}
	if err = bs.PutBatch(ctx, append(others, store.Write{Key: e.seam.stateKey("events"), Value: b})); err == nil {
		e.lastStored = b
		return nil
	}
	e.seam.storeFailed(ctx, "write", recordEvents, fmt.Errorf("tool: store event state of task %s: %w", e.seam.ID(), err))
	return err
}

// saveChanged is save when the state differs from what this process last wrote or read: Detach (and so the
// eviction of a store-mode Router's cache) writes nothing for a task whose state did not change.
func (e *taskEvents) saveChanged(ctx context.Context) error {
	b, err := e.marshal()
	e.saveMu.Lock()
	same := err == nil && e.lastStored != nil && string(b) == string(e.lastStored)
	e.saveMu.Unlock()
	if same {
		return nil
	}
	return e.save(ctx)
}

// eventsJSON is the event state as stored: the interrupted flag, the expired events and the last activity.
func (e *taskEvents) marshal() ([]byte, error) {
	e.mu.Lock()
	s := storedEvents{Interrupted: e.interrupted.Load(),
		LastActivityAt: time.Unix(0, e.lastActivity.Load()).UTC(), ExpiresAt: e.expiresAt.UTC()}
	for i, exp := range e.expired {
		if exp {
			s.Expired = append(s.Expired, e.tool.events[i].def.Name)
		}
	}
	e.mu.Unlock()
	return json.Marshal(s)
}
