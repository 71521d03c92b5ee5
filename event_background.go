package tool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/commonagents-go/tool/events"
	"github.com/commonagents-go/tool/events/poll"
	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/store"
)

// workers are a task's running background events (subscriptions and polls, SPEC §9.3–9.4): started at NewTask
// and Resume for the included events that have not expired, stopped by Interrupt, expiry and Close.
type workers struct {
	mu       sync.Mutex
	running  []events.Worker       // by event index; nil when not running
	busy     []bool                // by event index: a Stop is running; the event starts again only after it
	stopping flight                // stops in the background (expiry)
	watchdog func(context.Context) // stops the expiry watchdog; nil when the task has none
	closed   bool                  // set by Close: nothing starts or stops in the background any more
}

// background reports whether event i works in the background.
func (e *taskEvents) background(i int) (events.Background, bool) {
	bg, ok := e.tool.events[i].prepared.(events.Background)
	return bg, ok
}

// startWorkers starts the background events that should run and are not running. It does nothing once the task
// is closed or while it is interrupted.
func (e *taskEvents) startWorkers() {
	e.workers.mu.Lock()
	defer e.workers.mu.Unlock()
	if e.workers.closed || e.interrupted.Load() {
		return
	}
	if e.workers.running == nil {
		e.workers.running = make([]events.Worker, len(e.tool.events))
		e.workers.busy = make([]bool, len(e.tool.events))
	}
	e.mu.Lock()
	expired := append([]bool(nil), e.expired...)
	e.mu.Unlock()
	watch := false
	for i := range e.tool.events {
		bg, ok := e.background(i)
		if !ok || !e.included[i] {
			continue
		}
		watch = watch || e.timeouts[i] > 0
		if expired[i] || e.workers.running[i] != nil || e.workers.busy[i] {
			continue
		}
		e.workers.running[i] = bg.Start(e.seam.host(i))
	}
	if watch && e.workers.watchdog == nil {
		e.workers.watchdog = events.Loop(e.newTimer, e.nextExpiry(), e.watchExpiry)
	}
}

// stopWorkers stops the background events for which which reports true, in parallel, each bounded by the
// teardown bound, and returns their errors. An event whose worker is stopping does not start again before its
// Stop returned (its state would race); then whatever should run by now is started.
func (e *taskEvents) stopWorkers(ctx context.Context, reason string, which func(i int) bool) error {
	e.workers.mu.Lock()
	var stop []int
	var ws []events.Worker
	for i, w := range e.workers.running {
		if w != nil && !e.workers.busy[i] && which(i) {
			stop, ws = append(stop, i), append(ws, w)
			e.workers.busy[i] = true
		}
	}
	e.workers.mu.Unlock()
	if len(stop) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.tool.opts.limits.TeardownTimeout)
	defer cancel()
	errs := make([]error, len(stop))
	var wg sync.WaitGroup
	for n, w := range ws {
		wg.Go(func() { errs[n] = w.Stop(ctx, reason) })
	}
	wg.Wait()
	e.workers.mu.Lock()
	for _, i := range stop {
		e.workers.running[i], e.workers.busy[i] = nil, false
	}
	e.workers.mu.Unlock()
	e.startWorkers()
	return errors.Join(errs...)
}

func all(int) bool { return true }

// stopExpired stops the workers of newly expired events in the background: expiry is noticed on hot paths (a
// delivery) that must not wait for an unsubscribe. Close waits for these stops.
func (e *taskEvents) stopExpired(newly []int) {
	which := func(i int) bool { return slices.Contains(newly, i) }
	e.workers.mu.Lock()
	defer e.workers.mu.Unlock()
	if e.workers.closed || !slices.ContainsFunc(e.workers.running, func(w events.Worker) bool { return w != nil }) {
		return
	}
	e.workers.stopping.goFunc(func() { _ = e.stopWorkers(e.ctx, events.StopExpired, which) })
}

// stopWatchdog stops the expiry watchdog; startWorkers starts a new one.
func (e *taskEvents) stopWatchdog(ctx context.Context) {
	e.workers.mu.Lock()
	watchdog := e.workers.watchdog
	e.workers.watchdog = nil
	e.workers.mu.Unlock()
	if watchdog != nil {
		watchdog(ctx)
	}
}

// close ends the event side for Task.close, before the task waits for its calls: nothing starts in the
// background any more, the watchdog and every worker stop (detached: in this process only) and background stops
// are waited for, within the teardown bound. The event state itself is persisted or removed with the task's.
func (e *taskEvents) close(ctx context.Context, detach bool) error {
	e.workers.mu.Lock()
	e.workers.closed = true
	e.workers.mu.Unlock()
	e.stopWatchdog(ctx)
	reason := events.StopClosed
	if detach {
		reason = events.StopDetached
	}
	err := e.stopWorkers(ctx, reason, all)
	bound, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.tool.opts.limits.TeardownTimeout)
	defer cancel()
	if !e.workers.stopping.wait(bound) {
		err = errors.Join(err, errors.New("expired subscriptions still being removed"))
	}
	return err
}

// watchExpiry is the expiry watchdog's step: it expires the events whose timeout passed (stopping their
// workers) and returns the delay to the next deadline.
func (e *taskEvents) watchExpiry(context.Context) time.Duration {
	e.mu.Lock()
	newly := e.expireLocked(e.tool.opts.clock.Now().UnixNano())
	e.mu.Unlock()
	e.expiredNow(newly)
	return e.nextExpiry()
}

// nextExpiry is the time until the earliest deadline of an event that has not expired. Activity only moves
// deadlines later, so waking at an old deadline is early, never late; with every event expired it is the
// shortest timeout, which a Resume cannot undercut.
func (e *taskEvents) nextExpiry() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	idle := time.Duration(e.tool.opts.clock.Now().UnixNano() - e.lastActivity.Load())
	var next, shortest time.Duration
	for i, d := range e.timeouts {
		if d <= 0 {
			continue
		}
		if shortest == 0 || d < shortest {
			shortest = d
		}
		if left := d - idle + time.Nanosecond; !e.expired[i] && (next == 0 || left < next) {
			next = max(left, time.Nanosecond)
		}
	}
	if next == 0 {
		next = shortest
	}
	return next
}

func (e *taskEvents) newTimer(d time.Duration) events.Timer { return e.tool.opts.clock.NewTimer(d) }

// host is what event i's worker gets from the task.
func (t *Task) host(i int) *events.Host {
	o := t.tool.opts
	name := t.tool.events[i].def.Name
	params := t.boundParams()
	h := &events.Host{
		Task: t.id, Tool: t.tool.Name(), Event: name,
		Client: t.tool.httpClient,
		Values: func(ctx context.Context, extra map[string]any) interp.Resolver {
			return &eventValues{call: callValues{ctx: ctx, task: t, event: name, args: params}, extra: extra}
		},
		Parameters: params,
		Now:        o.clock.Now,
		NewTimer:   t.events.newTimer,
		State:      &backendState{task: t, key: t.stateKey("receivers/" + name), record: recordReceiver},
		Observe: func(ctx context.Context, fact string, data map[string]any) {
			if data == nil {
				data = map[string]any{}
			}
			data["event"] = name
			t.observeExternal(ctx, fact, data)
		},
		Logger: t.logger().With("tool", t.tool.Name(), "task", t.id, "event", name),
		Emit:   func(ctx context.Context, item any, at time.Time) (bool, error) { return t.emit(ctx, i, item, at) },
		Limits: events.Limits{ChannelTTL: o.limits.ChannelTTL, RenewAt: o.limits.RenewAt,
			PollInterval: o.limits.PollInterval, Timeout: t.events.timeouts[i],
			RequestTimeout: o.limits.CallTimeout, ResponseBytes: o.limits.ResponseBytes},
	}
	if leases, ok := o.store.(store.LeaseStore); ok {
		key, owner := t.stateKey("leases/"+name), o.replicaID()
		h.Lease = func(ctx context.Context, ttl time.Duration) (bool, error) {
			held, err := leases.Lease(ctx, key, owner, ttl)
			if err != nil && ctx.Err() == nil {
				t.storeFailed(ctx, "lease", recordLease, err)
			}
			return held, err
		}
		h.Release = func(ctx context.Context) error { return leases.Release(ctx, key, owner) }
	}
	return h
}

// eventValues resolves a background event's templates: the extra roots (subscription, subscribe, poll) first,
// then the task's roots as a call sees them, with the bindings as parameters.
type eventValues struct {
	call  callValues
	extra map[string]any
}

func (v *eventValues) Resolve(ref interp.Ref) (any, error) {
	if root, ok := v.extra[ref.Root]; ok {
		m, _ := root.(map[string]any)
		if len(ref.Steps) == 0 {
			return root, nil
		}
		return lookup(m, ref.Steps), nil
	}
	return v.call.Resolve(ref)
}

// emit runs one polled item through the activation pipeline of event i (SPEC §9.4) and reports whether it
// activated the task: a discard is reported as a fact and handled; an error means the Sink did not take the
// activation.
func (t *Task) emit(ctx context.Context, i int, item any, at time.Time) (bool, error) {
	if err := t.enter(); err != nil {
		return false, err
	}
	defer t.leave()
	ev := t.tool.events[i]
	pe := &pushedEvent{ev: ev, tried: true, parent: &inbound{received: at, payload: item, item: poll.Fingerprint(item)}}
	pe.event = map[string]any{"payload": item, "name": ev.name}
	pe.vars = map[string]any{"event": pe.event, "now": poll.Format(t.tool.opts.clock.Now())}
	if ev.filter != nil {
		pe.match = ev.filter.Prepare(ctx, pe.vars)
	}
	if ev.extract != nil {
		pe.pre = &extraction{}
	}
	d := &Delivery{TaskID: t.id}
	if err := t.handle(ctx, d, i, pe); err != nil {
		return false, fmt.Errorf("tool: poll %s of task %s: %w", ev.def.Name, t.id, err)
	}
	return len(d.Activations) > 0, nil
}
