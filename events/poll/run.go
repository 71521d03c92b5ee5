package poll

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/commonagents-go/tool/allowlist"
	"github.com/commonagents-go/tool/events"
	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/internal/httpspec"
)

// SeenLimit is how many item fingerprints a poll remembers at least; the items of the latest response are always
// remembered, however many there are, so an item that stays in the response never fires twice.
const SeenLimit = 2048

// MaxBackoff is how many intervals a failing poll waits at most between attempts.
const MaxBackoff = 32

// TimeFormat is the format of poll.last_fetched_at and of `now` (SPEC §5): UTC RFC 3339 with second precision.
const TimeFormat = time.RFC3339

// State is what a poll keeps in the task state.
type State struct {
	// Baselined is set once the first successful poll recorded the items present without firing them.
	Baselined bool `json:"baselined"`
	// LastFetchedAt is the watermark: the time of the last successful fetch whose items were all handled.
	LastFetchedAt time.Time `json:"last_fetched_at"`
	// Seen are the fingerprints of recently detected items, newest first.
	Seen []string `json:"seen,omitempty"`
}

// Start polls at once in the background (the baseline) and then every interval until Stop.
func (e *Event) Start(h *events.Host) events.Worker {
	w := &worker{ev: e, h: h, started: h.Now(), interval: e.Interval}
	if w.interval <= 0 {
		w.interval = h.Limits.PollInterval
	}
	w.stop = events.Loop(h.NewTimer, 0, w.step)
	return w
}

type worker struct {
	ev       *Event
	h        *events.Host
	stop     func(context.Context)
	started  time.Time
	interval time.Duration

	// Owned by the loop goroutine.
	loaded   bool
	dirty    bool // state changed here and not written yet: newer than the stored one, never replaced by it
	state    State
	failures int // consecutive failed fetches
	stopOnce sync.Once
}

// step fetches once, detects the items, fires the new ones and returns the delay to the next fetch.
//
// A step never runs on a stale state: while the previous step's state is unwritten (a Store outage), the next
// step writes it first and fetches only once that succeeded; a state it cannot read or write ends the step with
// a poll.failed fact (reason store), retried after one interval.
func (w *worker) step(ctx context.Context) time.Duration {
	if w.h.Lease != nil {
		held, err := w.h.Lease(ctx, w.leaseTTL())
		if err != nil {
			return w.storeFailed(ctx, "lease", err)
		}
		if !held {
			return w.interval // another replica polls; try again, to take over if it stops
		}
		defer w.heartbeat(ctx)() // a slow Sink must not let the lease run out under the step
	}
	if err := w.sync(ctx); err != nil {
		return w.storeFailed(ctx, "state", err)
	}
	fetchedAt := w.h.Now()
	items, err := w.fetch(ctx, fetchedAt)
	if ctx.Err() != nil {
		return w.interval
	}
	if err != nil {
		w.failures++
		retry := min(w.interval*(1<<min(w.failures, 5)), w.interval*MaxBackoff)
		w.h.Observe(ctx, facts.PollFailed, map[string]any{"reason": "fetch", "error": err.Error(), "attempt": w.failures,
			"retry_in": retry.String()})
		return retry
	}
	w.failures = 0
	baseline := !w.state.Baselined
	seen := make(map[string]bool, len(w.state.Seen))
	for _, fp := range w.state.Seen {
		seen[fp] = true
	}
	current := make([]string, 0, len(items))
	fired, discarded, refused := 0, 0, 0
	for _, item := range items {
		fp := Fingerprint(item)
		if seen[fp] {
			current = append(current, fp)
			continue
		}
		if !baseline {
			if w.h.Lease != nil && !w.holds(ctx) {
				return w.interval // the lease was lost (a slow Sink): the new holder offers the rest
			}
			activated, err := w.h.Emit(ctx, item, fetchedAt)
			switch {
			case err != nil:
				refused++ // not remembered: the next poll offers it again
				continue
			case activated:
				fired++
			default:
				discarded++
			}
			// Recorded at once, so that a crash re-fires at most the item in hand, not the step's earlier ones. A
			// failed write leaves the state dirty: the next step writes it before anything else.
			w.remember([]string{fp})
			w.dirty = true
			w.trySave(ctx)
		}
		seen[fp] = true
		current = append(current, fp)
	}
	if ctx.Err() != nil || w.h.Lease != nil && !w.holds(ctx) {
		return w.interval // stopped meanwhile (Stop decides what the state becomes), or the lease was lost
	}
	w.remember(current)
	w.state.Baselined = true
	if refused == 0 {
		w.state.LastFetchedAt = fetchedAt
	}
	w.dirty = true
	if err := w.trySave(ctx); err != nil {
		return w.storeFailed(ctx, "state", err)
	}
	w.h.Observe(ctx, facts.PollFetched, map[string]any{"items": len(items), "fired": fired, "discarded": discarded,
		"refused": refused, "baseline": baseline})
	return w.interval
}

// sync brings the state up to date before a step. Unwritten state is written first: it is newer than the
// stored one (merged with it when replicas share it: another may have polled while this one could not write).
// Otherwise the stored state is read when it was never read, or when another replica may have changed it.
func (w *worker) sync(ctx context.Context) error {
	if w.dirty {
		if w.h.Lease != nil {
			var stored State
			if err := w.h.LoadState(ctx, &stored); err != nil {
				return err
			}
			w.merge(stored)
		}
		return w.trySave(ctx)
	}
	if w.h.Lease != nil || !w.loaded {
		return w.load(ctx)
	}
	return nil
}

// merge adds what another replica recorded to the state: its seen items, a later watermark, its baseline.
func (w *worker) merge(other State) {
	w.state.Baselined = w.state.Baselined || other.Baselined
	if other.LastFetchedAt.After(w.state.LastFetchedAt) {
		w.state.LastFetchedAt = other.LastFetchedAt
	}
	mine := w.state.Seen
	w.state.Seen = other.Seen
	w.remember(mine)
}

// trySave writes the state when it is dirty.
func (w *worker) trySave(ctx context.Context) error {
	if !w.dirty {
		return nil
	}
	if err := w.h.SaveState(ctx, w.state); err != nil {
		return err
	}
	w.dirty = false
	return nil
}

// storeFailed reports a step that could not read or write its state (or its lease) and returns the delay to the
// next attempt: one interval.
func (w *worker) storeFailed(ctx context.Context, what string, err error) time.Duration {
	w.h.Observe(ctx, facts.PollFailed, map[string]any{"reason": "store", "operation": what, "error": err.Error(),
		"retry_in": w.interval.String()})
	return w.interval
}

// fetch sends the request and evaluates detect, which must return a list.
func (w *worker) fetch(ctx context.Context, now time.Time) ([]any, error) {
	since := w.state.LastFetchedAt
	if since.IsZero() {
		since = w.started
	}
	pollVar := map[string]any{"last_fetched_at": Format(since)}
	rctx := ctx
	if t := w.h.Limits.RequestTimeout; t > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	req, err := w.ev.Request.Build(rctx, w.h.Values(rctx, map[string]any{"poll": pollVar}))
	if err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	resp, err := httpspec.Do(rctx, w.h.Client, req, w.h.Limits.ResponseBytes)
	if err != nil {
		return nil, err
	}
	out, err := w.ev.Detect.Eval(ctx, map[string]any{"response": resp.Body, "poll": pollVar,
		"parameters": w.h.Parameters, "now": Format(now)})
	if err != nil {
		return nil, fmt.Errorf("detect: %w", err)
	}
	switch items := out.(type) {
	case []any:
		return items, nil
	case nil:
		return nil, nil
	default:
		return nil, fmt.Errorf("detect returned %T, not a list", out)
	}
}

// holds acquires or renews the poll's lease and reports whether this replica holds it. The lease lasts two
// intervals and a request past now: a live holder renews it on every step and before every item.
func (w *worker) holds(ctx context.Context) bool {
	held, err := w.h.Lease(ctx, w.leaseTTL())
	return err == nil && held
}

func (w *worker) leaseTTL() time.Duration { return 2*w.interval + w.h.Limits.RequestTimeout }

// heartbeat renews the lease in the background, a third of its ttl apart on the wall clock (the lease's clock),
// until the returned function is called.
func (w *worker) heartbeat(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(max(w.leaseTTL()/3, time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				w.holds(ctx)
			}
		}
	}()
	return func() { cancel(); <-done }
}

// remember keeps the fingerprints of the current response first, then older ones up to SeenLimit.
func (w *worker) remember(current []string) {
	keep := max(SeenLimit, len(current))
	in := make(map[string]bool, len(current))
	next := make([]string, 0, min(keep, len(current)+len(w.state.Seen)))
	for _, fp := range current {
		if !in[fp] {
			in[fp] = true
			next = append(next, fp)
		}
	}
	for _, fp := range w.state.Seen {
		if len(next) >= keep {
			break
		}
		if !in[fp] {
			in[fp] = true
			next = append(next, fp)
		}
	}
	w.state.Seen = next
}

// Stop ends the polling. A poll stopped by an interrupt or its timeout forgets its watermark and seen items, so
// that on Resume it baselines again and what happened meanwhile does not pile up (SPEC §9.5); a closed task's
// state is removed with the task.
func (w *worker) Stop(ctx context.Context, reason string) error {
	var err error
	w.stopOnce.Do(func() {
		w.stop(ctx)
		if reason == events.StopDetached {
			_ = w.trySave(ctx) // what a Store outage left unwritten, for the process that resumes the task
		}
		// Only the lease holder resets the state: it is shared with the replicas, which may still poll.
		if (reason == events.StopInterrupted || reason == events.StopExpired) && (w.h.Lease == nil || w.holds(ctx)) {
			err = w.h.State.Save(ctx, []byte("{}"))
		}
		if w.h.Release != nil {
			_ = w.h.Release(ctx)
		}
		w.h.Observe(ctx, facts.PollStopped, map[string]any{"reason": reason}) // detached: the state stays as it is
	})
	return err
}

// Fingerprint identifies an item: its id field when it is an object with one, else a hash of its JSON.
func Fingerprint(item any) string {
	if m, ok := item.(map[string]any); ok {
		if id, ok := m["id"]; ok && id != nil {
			return "id:" + allowlist.Canonical(id)
		}
	}
	b, err := json.Marshal(item) // map keys sorted: the same item gives the same text
	if err != nil {
		b = fmt.Appendf(nil, "%v", item)
	}
	sum := sha256.Sum256(b)
	return "h:" + hex.EncodeToString(sum[:16])
}

// Format renders t as SPEC §5's time text: UTC, RFC 3339, whole seconds.
func Format(t time.Time) string { return t.UTC().Truncate(time.Second).Format(TimeFormat) }

// load replaces the state with the stored one; on a Store failure it keeps the state it has.
func (w *worker) load(ctx context.Context) error {
	var s State
	if err := w.h.LoadState(ctx, &s); err != nil {
		return err
	}
	w.loaded, w.state = true, s
	return nil
}

var _ events.Background = (*Event)(nil)
