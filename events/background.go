package events

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/runtime"
)

// Background is implemented by events that work while their task runs, instead of waiting for pushes alone: a
// subscription keeps a push channel registered, a poll fetches. The task starts one Worker per such event at
// NewTask and Resume, and stops it on Close, Interrupt and timeout expiry (SPEC §9.3–9.5).
type Background interface {
	Event
	// Start begins the work for one task and returns at once: the work runs in goroutines the Worker owns until
	// Stop. It must not block on the network.
	Start(h *Host) Worker
}

// Retirer is implemented by background events whose records can outlive their worker: when a resumed task
// will not run the event (the capability no longer includes it, it expired or the task was interrupted while
// the earlier process was gone), Retire removes what the records hold (a subscription's channels) without
// starting anything.
type Retirer interface {
	Retire(ctx context.Context, h *Host, reason string) error
}

// Worker is the background work of one event for one task.
type Worker interface {
	// Stop ends the work: its timers stop, its goroutines exit before Stop returns, and what it registered
	// remotely is removed (a subscription's channel) unless reason is StopDetached. ctx bounds the removal;
	// failures are reported as facts and returned. reason is one of the Stop constants. Stop runs once per Worker.
	Stop(ctx context.Context, reason string) error
}

// The reasons a Worker stops.
const (
	StopClosed      = "closed"
	StopInterrupted = "interrupted"
	StopExpired     = "expired"
	// StopDetached stops the work in this process only: nothing is removed remotely and the state is kept, for
	// the process that resumes the task (Task.Detach).
	StopDetached = "detached"
)

// Host is what a background event gets from its task: the values, clock, HTTP client, state slot and facts of
// the task, and the activation pipeline polled items go through.
type Host struct {
	// Task, Tool and Event name the task, its manifest and the event.
	Task, Tool, Event string
	// Client sends every request; its redirect policy is already set (SPEC §4.4).
	Client *http.Client
	// Values resolves the template roots the task supplies — parameters (the task's bindings), settings,
	// runtime, agent and auth — and, from extra, any other root (subscription, subscribe, poll). ctx bounds
	// auth token requests.
	Values func(ctx context.Context, extra map[string]any) interp.Resolver
	// Parameters are the task's bindings: detect's `parameters`.
	Parameters map[string]any
	// Now and NewTimer are the task's clock.
	Now      func() time.Time
	NewTimer func(d time.Duration) Timer
	// State is the event's slot in the task state (SPEC §13): subscription records, poll watermarks.
	State runtime.State
	// Observe reports a fact such as "subscription.created"; data must not hold secrets (the task masks the
	// ones it knows). Never nil.
	Observe func(ctx context.Context, name string, data map[string]any)
	// Logger is the host's logger, with the task and event attached. Never nil.
	Logger *slog.Logger
	// Emit runs one item a poll detected through the task's activation pipeline (filter, extractions,
	// message, Sink: SPEC §9.1) at time at and reports whether it activated the task. It returns an error only
	// when the Sink did not accept the activation; a discarded item (filter false, interrupted, ...) is handled.
	Emit func(ctx context.Context, item any, at time.Time) (activated bool, err error)
	// Limits are the host's bounds for background work.
	Limits Limits
	// Lease, when not nil, is how replicas sharing the task state take turns (SPEC §13): a step that does work
	// (a fetch, a renewal) first acquires or renews the event's lease for ttl, skips the work when another
	// replica holds it, and reloads State, which the other replica may have changed. Release gives it up.
	Lease   func(ctx context.Context, ttl time.Duration) (bool, error)
	Release func(ctx context.Context) error
}

// LoadState decodes the event's record from State into v. Nothing stored leaves v as it is; a record that
// cannot be decoded is logged and ignored, so the work starts afresh rather than not at all. A Store failure is
// returned (the task reports it as a store.failed fact): the caller must not act on a state it could not read.
func (h *Host) LoadState(ctx context.Context, v any) error {
	b, err := h.State.Load(ctx)
	if err != nil {
		return fmt.Errorf("read event state: %w", err)
	}
	if len(b) > 0 {
		if err := json.Unmarshal(b, v); err != nil {
			h.Logger.Warn("event state unreadable; starting afresh", "error", err)
		}
	}
	return nil
}

// SaveState writes v as the event's record, even when ctx is cancelled (what happened must be recorded). A
// failure is returned (the task reports it as a store.failed fact).
func (h *Host) SaveState(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode event state: %w", err)
	}
	if err := h.State.Save(context.WithoutCancel(ctx), b); err != nil {
		return fmt.Errorf("write event state: %w", err)
	}
	return nil
}

// LeaseMargin is added to a lease's ttl beyond the time its holder expects to need, so that a live holder keeps
// it across a slow step.
const LeaseMargin = 30 * time.Second

// Limits bound background work (SPEC §14).
type Limits struct {
	// ChannelTTL is how long a subscription channel lives: subscription.expires_at_ms is now + ChannelTTL,
	// capped by Timeout.
	ChannelTTL time.Duration
	// RenewAt is the fraction of ChannelTTL after which the channel is renewed (before jitter).
	RenewAt float64
	// PollInterval is the time between fetches when the event names no interval.
	PollInterval time.Duration
	// Timeout is the event's effective timeout (SPEC §9.5); 0 = none.
	Timeout time.Duration
	// RequestTimeout bounds one request; ResponseBytes one response body.
	RequestTimeout time.Duration
	ResponseBytes  int64
}

// Timer is a timer of the task's clock.
type Timer interface {
	// C delivers the time when the timer fires; it holds at most one unread firing.
	C() <-chan time.Time
	// Stop prevents the timer from firing and reports whether it was pending.
	Stop() bool
	// Reset makes the timer fire d from now and reports whether it was pending.
	Reset(d time.Duration) bool
}

// Loop runs step in a goroutine of its own: first after delay first, then each time after the delay the
// previous step returned, until stopped. The delays run on newTimer's clock (Host.NewTimer).
//
// stop(ctx) cancels step's ctx and waits for a running step to return, until ctx ends. Called from within the
// step — a Sink that interrupts or closes its task while a poll hands it an item, passing on the ctx it was
// given — it does not wait for itself.
func Loop(newTimer func(time.Duration) Timer, first time.Duration, step func(ctx context.Context) time.Duration) (stop func(ctx context.Context)) {
	l := &loop{done: make(chan struct{})}
	var ctx context.Context
	ctx, l.cancel = context.WithCancel(context.WithValue(context.Background(), loopKey{}, l))
	go func() {
		defer close(l.done)
		timer := newTimer(first)
		defer timer.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-timer.C():
			}
			if ctx.Err() != nil {
				return
			}
			next := step(ctx)
			if ctx.Err() != nil {
				return
			}
			timer.Reset(next)
		}
	}()
	return l.stop
}

type loop struct {
	cancel context.CancelFunc
	done   chan struct{}
}

type loopKey struct{}

func (l *loop) stop(ctx context.Context) {
	l.cancel()
	if ctx.Value(loopKey{}) == l {
		return
	}
	select {
	case <-l.done:
	case <-ctx.Done():
	}
}

// Backoff is the delay before retry number n (1-based) of a failing operation: base doubled per retry, at most
// max.
func Backoff(base, max time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}
