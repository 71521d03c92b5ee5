package subscription

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"sync"
	"time"

	"github.com/commonagents-go/tool/events"
	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/internal/httpspec"
)

// Retry bounds: a failed subscribe or unsubscribe is retried after RetryMin, doubling up to RetryMax. While the
// worker stops, failed unsubscribes are retried on the wall clock from StopRetryMin, within the stop's bound, so
// that a test's fake clock cannot hold Close.
const (
	RetryMin     = time.Second
	RetryMax     = 5 * time.Minute
	StopRetryMin = 100 * time.Millisecond
)

// LeaseRetry is how often a replica that does not hold a subscription's lease checks whether it should take over.
const LeaseRetry = time.Minute

// Jitter is the largest fraction of a channel's TTL by which its renewal is moved earlier, so that many tasks'
// channels created together do not all renew at the same instant.
const Jitter = 0.05

// Channel is one registered push channel: the values its unsubscribe renders with.
type Channel struct {
	// ID is {subscription.id}; ExpiresAtMS is {subscription.expires_at_ms}.
	ID          string `json:"id"`
	ExpiresAtMS int64  `json:"expires_at_ms"`
	// Response is {subscribe.*}: the subscribe call's decoded response body, as-is.
	Response any `json:"response,omitempty"`
	// CreatedAt is when the subscribe succeeded; RenewAt when the channel is due for renewal.
	CreatedAt time.Time `json:"created_at,omitzero"`
	RenewAt   time.Time `json:"renew_at,omitzero"`
	// Unconfirmed marks a channel whose subscribe was sent but whose outcome is unknown (a lost reply, a crash):
	// the platform may or may not hold it, and Response is unknown.
	Unconfirmed bool `json:"unconfirmed,omitempty"`
}

// State is what the worker keeps in the task state.
type State struct {
	// Current is the live channel; nil before the first subscribe succeeded.
	Current *Channel `json:"current,omitempty"`
	// Stale are replaced or stopped channels whose unsubscribe has not succeeded yet.
	Stale []Channel `json:"stale,omitempty"`
	// Pending is the channel whose subscribe is being sent: recorded before the request leaves, so that after a
	// crash at any point the resumed task knows every channel the platform may hold, and removes it.
	Pending *Channel `json:"pending,omitempty"`
}

// Start subscribes at once in the background and keeps the channel renewed until Stop.
func (e *Event) Start(h *events.Host) events.Worker {
	w := &worker{ev: e, h: h}
	w.stop = events.Loop(h.NewTimer, 0, w.step)
	return w
}

type worker struct {
	ev   *Event
	h    *events.Host
	stop func(context.Context)

	mu      sync.Mutex
	abort   context.CancelFunc // cancels the request the loop has in flight
	aborted bool               // Stop's bound passed: no request may start any more

	// Owned by the loop goroutine until stop returns, then by Stop.
	loaded        bool
	dirty         bool // the state changed and its write failed: the stored one is older
	state         State
	failures      int    // consecutive failed subscribes
	abandoned     string // the id of a subscribe Stop's bound aborted: the platform may have registered it
	staleFailures int    // consecutive rounds in which a stale channel could not be unsubscribed
	stopOnce      sync.Once
	stopErr       error
}

// requests returns the context of the loop's requests: not cancelled when Stop begins — a channel the platform
// registered must be recorded so that Stop removes it, and one it removed must not be removed twice — but
// aborted when Stop's bound ends, so that Stop never waits longer.
func (w *worker) requests(ctx context.Context) (context.Context, context.CancelFunc) {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.aborted {
		cancel()
	}
	w.abort = cancel
	return rctx, cancel
}

func (w *worker) abortRequests() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.aborted = true
	if w.abort != nil {
		w.abort()
	}
}

// step subscribes when there is no live channel or it is due for renewal (make-before-break: the old channel is
// unsubscribed only once the new one exists), retries unsubscribes that failed, and returns the delay to the
// next thing to do.
func (w *worker) step(ctx context.Context) time.Duration {
	if w.h.Lease != nil {
		held, err := w.h.Lease(ctx, w.h.Limits.RequestTimeout*3+events.LeaseMargin)
		if err != nil || !held {
			return LeaseRetry // another replica renews; check again, to take over if it stops
		}
	}
	if err := w.sync(ctx, w.h.Lease != nil); err != nil { // the other replica may have renewed since
		w.h.Observe(ctx, facts.SubscriptionFailed, map[string]any{"reason": "store", "error": err.Error(),
			"retry_in": RetryMin.String()})
		return RetryMin
	}
	now := w.h.Now()
	rctx, cancel := w.requests(ctx)
	defer cancel()
	if cur := w.state.Current; cur == nil || !now.Before(cur.RenewAt) {
		ch, err := w.subscribe(ctx, rctx, now)
		if err != nil {
			if ctx.Err() != nil {
				if rctx.Err() != nil {
					w.abandoned = ch.ID
				}
				return 0
			}
			w.failures++
			retry := events.Backoff(RetryMin, RetryMax, w.failures)
			w.h.Observe(ctx, facts.SubscriptionFailed, map[string]any{"error": err.Error(), "attempt": w.failures,
				"renewal": cur != nil, "retry_in": retry.String()})
			return w.next(now, retry)
		}
		w.failures = 0
		if cur != nil {
			w.state.Stale = append(w.state.Stale, *cur)
		}
		w.state.Current, w.state.Pending = ch, nil
		w.save(ctx)
		fact := facts.SubscriptionCreated
		data := map[string]any{"subscription_id": ch.ID, "expires_at_ms": ch.ExpiresAtMS}
		if cur != nil {
			fact, data["previous"] = facts.SubscriptionRenewed, cur.ID
		}
		w.h.Observe(ctx, fact, data)
	}
	if ctx.Err() == nil {
		w.retryStale(rctx)
	}
	return w.next(now, 0)
}

// next is the delay to the next thing to do: retry a failed subscribe (retry > 0), else renew the current
// channel; sooner when stale channels wait for another unsubscribe.
func (w *worker) next(now time.Time, retry time.Duration) time.Duration {
	d := retry
	if cur := w.state.Current; d == 0 && cur != nil {
		d = cur.RenewAt.Sub(now)
	}
	if len(w.state.Stale) > 0 {
		if stale := events.Backoff(RetryMin, RetryMax, w.staleFailures+1); d <= 0 || stale < d {
			d = stale
		}
	}
	if d <= 0 {
		d = RetryMin
	}
	return d
}

// subscribe registers a new channel; on failure it also returns the channel it tried (its id). The channel is
// recorded as pending before its request is sent (a failed write sends nothing); when the outcome is unknown
// (no response, or a success whose body could not be read) it stays recorded, unconfirmed, among the stale
// channels to remove. An error status means the platform did not create it. rctx bounds the
// request, ctx the state writes.
func (w *worker) subscribe(ctx, rctx context.Context, now time.Time) (*Channel, error) {
	ttl := w.h.Limits.ChannelTTL
	if t := w.h.Limits.Timeout; t > 0 && t < ttl {
		ttl = t
	}
	ch := &Channel{ID: newID(), ExpiresAtMS: now.Add(ttl).UnixMilli()}
	w.state.Pending = &Channel{ID: ch.ID, ExpiresAtMS: ch.ExpiresAtMS, Unconfirmed: true}
	w.dirty = true
	if err := w.trySave(ctx); err != nil {
		w.state.Pending, w.dirty = nil, false // nothing was sent
		return ch, fmt.Errorf("subscribe not sent: the channel could not be recorded first: %w", err)
	}
	resp, status, err := w.send(rctx, w.ev.Subscribe, ch, false)
	if err != nil {
		if rctx.Err() == nil { // an aborted subscribe stays pending: Stop removes it
			if status < 400 { // no response (the platform may hold it), or one this host could not read
				w.state.Stale = append(w.state.Stale, *w.state.Pending)
			}
			w.state.Pending = nil
			w.save(ctx)
		}
		return ch, fmt.Errorf("subscribe: %w", err)
	}
	ch.Response = resp
	ch.CreatedAt = w.h.Now()
	renew := time.Duration(float64(ttl) * w.h.Limits.RenewAt)
	renew -= time.Duration(mathrand.Float64() * min(Jitter*float64(ttl), float64(renew)/2))
	ch.RenewAt = ch.CreatedAt.Add(renew)
	return ch, nil
}

// send renders and sends a subscribe or unsubscribe request for ch and returns the decoded response body and
// the response's status (0 when none arrived).
func (w *worker) send(ctx context.Context, req *httpspec.Compiled, ch *Channel, withResponse bool) (any, int, error) {
	if t := w.h.Limits.RequestTimeout; t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	extra := map[string]any{"subscription": map[string]any{"id": ch.ID, "expires_at_ms": ch.ExpiresAtMS}}
	if withResponse {
		extra["subscribe"] = ch.Response
	}
	r, err := req.Build(ctx, w.h.Values(ctx, extra))
	if err != nil {
		return nil, 0, err
	}
	resp, err := httpspec.Do(ctx, w.h.Client, r, w.h.Limits.ResponseBytes)
	status := 0
	if resp != nil {
		status = resp.Status
	}
	if err != nil {
		return nil, status, err
	}
	return resp.Body, status, nil
}

// retryStale tries once more to unsubscribe each stale channel; a channel past its expiry is dropped, since the
// platform has removed it by itself.
func (w *worker) retryStale(ctx context.Context) {
	if len(w.state.Stale) == 0 {
		return
	}
	now := w.h.Now().UnixMilli()
	var kept []Channel
	for _, ch := range w.state.Stale {
		if ch.ExpiresAtMS <= now {
			w.h.Observe(ctx, facts.SubscriptionRemoved, map[string]any{"subscription_id": ch.ID, "reason": "lapsed",
				"detail": "the channel expired before it could be unsubscribed"})
			continue
		}
		if err := w.unsubscribe(ctx, &ch, "replaced"); err != nil {
			kept = append(kept, ch)
		}
	}
	if len(kept) > 0 {
		w.staleFailures++
	} else {
		w.staleFailures = 0
	}
	w.state.Stale = kept
	w.save(ctx)
}

// unsubscribe removes ch and reports the outcome; without an unsubscribe request the channel is left to expire.
func (w *worker) unsubscribe(ctx context.Context, ch *Channel, reason string) error {
	if w.ev.Unsubscribe == nil {
		w.h.Observe(ctx, facts.SubscriptionRemoved, map[string]any{"subscription_id": ch.ID, "reason": reason,
			"detail": "no unsubscribe request: the channel expires on its own"})
		return nil
	}
	_, status, err := w.send(ctx, w.ev.Unsubscribe, ch, true)
	if err != nil && (status == 404 || status == 410 || ch.Unconfirmed && status >= 400 && status < 500) {
		// The platform does not know the channel: never created (a subscribe whose outcome was unknown) or
		// already removed (by an unsubscribe whose success a crash kept from the records). Nothing is left.
		w.h.Observe(ctx, facts.SubscriptionRemoved, map[string]any{"subscription_id": ch.ID, "reason": reason,
			"unknown_to_platform": true, "status": status,
			"detail": "the platform did not know the channel: it was never created or is already removed"})
		return nil
	}
	if err != nil {
		w.h.Observe(ctx, facts.SubscriptionUnsubscribeFailed, map[string]any{"subscription_id": ch.ID,
			"reason": reason, "error": err.Error()})
		return fmt.Errorf("unsubscribe %s: %w", ch.ID, err)
	}
	data := map[string]any{"subscription_id": ch.ID, "reason": reason}
	if ch.Unconfirmed {
		data["unconfirmed"] = true // its subscribe's outcome was unknown; removed in case the platform held it
	}
	w.h.Observe(ctx, facts.SubscriptionRemoved, data)
	return nil
}

// Stop ends the renewals and unsubscribes every channel, retrying failures until ctx ends. A subscribe in flight
// is waited for (its channel is then removed too) until ctx ends, when it is aborted. Channels that could not be
// unsubscribed stay in the state as stale.
func (w *worker) Stop(ctx context.Context, reason string) error {
	w.stopOnce.Do(func() {
		defer context.AfterFunc(ctx, w.abortRequests)()
		w.stop(ctx)
		if ctx.Err() != nil { // the step's requests are aborted by now: it ends at once
			w.stop(context.WithoutCancel(ctx))
		}
		if w.h.Lease != nil && !w.dirty {
			w.loaded = false // another replica may have renewed since this one loaded the records
		}
		if w.h.Release != nil {
			defer func() { _ = w.h.Release(ctx) }()
		}
		if reason == events.StopDetached {
			if w.dirty {
				w.stopErr = w.trySave(ctx)
			}
			return // the channels stay registered and recorded, for the process that resumes the task
		}
		if !w.loaded {
			if err := w.load(ctx); err != nil {
				w.stopErr = fmt.Errorf("channels not removed: %w", err)
				return
			}
		}
		todo := w.state.Stale
		if w.state.Current != nil {
			todo = append(todo, *w.state.Current)
		}
		if w.state.Pending != nil {
			todo = append(todo, *w.state.Pending)
		}
		w.state = State{}
		var errs []error
		if w.abandoned != "" {
			w.h.Observe(ctx, facts.SubscriptionAbandoned, map[string]any{"subscription_id": w.abandoned, "reason": reason,
				"detail": "the subscribe was still in flight when the stop's bound ended; the platform may hold the channel until it expires"})
			errs = append(errs, fmt.Errorf("subscribe of channel %s still in flight when the bound ended", w.abandoned))
		}
		for _, ch := range todo {
			if err := w.unsubscribeWithin(ctx, &ch, reason); err != nil {
				w.state.Stale = append(w.state.Stale, ch)
				errs = append(errs, err)
			}
		}
		w.save(ctx)
		w.stopErr = errors.Join(errs...)
	})
	return w.stopErr
}

// Retire unsubscribes the channels an earlier process recorded, without subscribing.
func (e *Event) Retire(ctx context.Context, h *events.Host, reason string) error {
	w := &worker{ev: e, h: h, stop: func(context.Context) {}}
	return w.Stop(ctx, reason)
}

// unsubscribeWithin retries an unsubscribe on the wall clock until it succeeds or ctx ends.
func (w *worker) unsubscribeWithin(ctx context.Context, ch *Channel, reason string) error {
	for n := 1; ; n++ {
		err := w.unsubscribe(ctx, ch, reason)
		if err == nil {
			return nil
		}
		t := time.NewTimer(events.Backoff(StopRetryMin, RetryMax, n))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// load replaces the state with the stored one; on a Store failure it keeps the state it has. A pending channel
// in the stored state is an earlier process's subscribe whose outcome it did not record: it becomes stale,
// unconfirmed, and is removed.
func (w *worker) load(ctx context.Context) error {
	var s State
	if err := w.h.LoadState(ctx, &s); err != nil {
		return err
	}
	if s.Pending != nil {
		s.Stale, s.Pending = append(s.Stale, *s.Pending), nil
	}
	w.loaded, w.state = true, s
	return nil
}

// sync writes state a failed write left unwritten (it is newer than the stored one), else reads the stored
// state when it was never read or reload is set.
func (w *worker) sync(ctx context.Context, reload bool) error {
	if w.dirty {
		return w.trySave(ctx)
	}
	if reload || !w.loaded {
		return w.load(ctx)
	}
	return nil
}

// save writes the state; a failure leaves it dirty, written by the next step before anything else.
func (w *worker) save(ctx context.Context) {
	w.dirty = true
	_ = w.trySave(ctx)
}

func (w *worker) trySave(ctx context.Context) error {
	if err := w.h.SaveState(ctx, w.state); err != nil {
		return err
	}
	w.dirty = false
	return nil
}

// newID returns a channel id: 32 random hex digits, which every platform's id syntax accepts.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

var (
	_ events.Background = (*Event)(nil)
	_ events.Retirer    = (*Event)(nil)
)
