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
)

// workers are a task's running background events (subscriptions and polls, SPEC §9.3–9.4): started at NewTask
// and Resume for the included events that have not expired, stopped by Interrupt, expiry and Close.
type workers struct {
	mu       sync.Mutex
	running  []events.Worker       // by event index; nil when not running
	busy     []bool                // by event index: a Stop is running; the event starts again only after it
	stopping sync.WaitGroup        // stops in the background (expiry)
	watchdog func(context.Context) // stops the expiry watchdog; nil when the task has none
	closed   bool                  // set by Close: nothing starts or stops in the background any more
}

// background reports whether event i works in the background.
func (t *Task) background(i int) (events.Background, bool) {
	bg, ok := t.tool.events[i].prepared.(events.Background)
	return bg, ok
}

// startWorkers starts the background events that should run and are not running. It does nothing once the task
// is closed or while it is interrupted.
func (t *Task) startWorkers() {
	t.workers.mu.Lock()
	defer t.workers.mu.Unlock()
	if t.workers.closed || t.isInterrupted() {
		return
	}
	if t.workers.running == nil {
		t.workers.running = make([]events.Worker, len(t.tool.events))
		t.workers.busy = make([]bool, len(t.tool.events))
	}
	t.events.mu.Lock()
	expired := append([]bool(nil), t.events.expired...)
	t.events.mu.Unlock()
	watch := false
	for i := range t.tool.events {
		bg, ok := t.background(i)
		if !ok || !t.events.included[i] {
			continue
		}
		watch = watch || t.events.timeouts[i] > 0
		if expired[i] || t.workers.running[i] != nil || t.workers.busy[i] {
			continue
		}
		t.workers.running[i] = bg.Start(t.host(i))
	}
	if watch && t.workers.watchdog == nil {
		t.workers.watchdog = events.Loop(t.newTimer, t.nextExpiry(), t.watchExpiry)
	}
}

// stopWorkers stops the background events for which which reports true, in parallel, each bounded by the
// teardown bound, and returns their errors. An event whose worker is stopping does not start again before its
// Stop returned (its state would race); then whatever should run by now is started.
func (t *Task) stopWorkers(ctx context.Context, reason string, which func(i int) bool) error {
	t.workers.mu.Lock()
	var stop []int
	var ws []events.Worker
	for i, w := range t.workers.running {
		if w != nil && !t.workers.busy[i] && which(i) {
			stop, ws = append(stop, i), append(ws, w)
			t.workers.busy[i] = true
		}
	}
	t.workers.mu.Unlock()
	if len(stop) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.tool.opts.limits.TeardownTimeout)
	defer cancel()
	errs := make([]error, len(stop))
	var wg sync.WaitGroup
	for n, w := range ws {
		wg.Go(func() { errs[n] = w.Stop(ctx, reason) })
	}
	wg.Wait()
	t.workers.mu.Lock()
	for _, i := range stop {
		t.workers.running[i], t.workers.busy[i] = nil, false
	}
	t.workers.mu.Unlock()
	t.startWorkers()
	return errors.Join(errs...)
}

func all(int) bool { return true }

// stopExpired stops the workers of newly expired events in the background: expiry is noticed on hot paths (a
// delivery) that must not wait for an unsubscribe. Close waits for these stops.
func (t *Task) stopExpired(newly []int) {
	which := func(i int) bool { return slices.Contains(newly, i) }
	t.workers.mu.Lock()
	defer t.workers.mu.Unlock()
	if t.workers.closed || !slices.ContainsFunc(t.workers.running, func(w events.Worker) bool { return w != nil }) {
		return
	}
	t.workers.stopping.Go(func() { _ = t.stopWorkers(t.ctx, events.StopExpired, which) })
}

// stopWatchdog stops the expiry watchdog; startWorkers starts a new one.
func (t *Task) stopWatchdog(ctx context.Context) {
	t.workers.mu.Lock()
	watchdog := t.workers.watchdog
	t.workers.watchdog = nil
	t.workers.mu.Unlock()
	if watchdog != nil {
		watchdog(ctx)
	}
}

// closeWorkers stops the watchdog and every worker (detached: in this process only), and waits for background
// stops, within the teardown bound.
func (t *Task) closeWorkers(ctx context.Context, detach bool) error {
	t.workers.mu.Lock()
	t.workers.closed = true
	t.workers.mu.Unlock()
	t.stopWatchdog(ctx)
	reason := events.StopClosed
	if detach {
		reason = events.StopDetached
	}
	err := t.stopWorkers(ctx, reason, all)
	bound, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.tool.opts.limits.TeardownTimeout)
	defer cancel()
	if !waitGroupWithin(bound, &t.workers.stopping) {
		err = errors.Join(err, errors.New("expired subscriptions still being removed"))
	}
	return err
}

// watchExpiry is the expiry watchdog's step: it expires the events whose timeout passed (stopping their
// workers) and returns the delay to the next deadline.
func (t *Task) watchExpiry(context.Context) time.Duration {
	t.events.mu.Lock()
	newly := t.expireLocked(t.tool.opts.clock.Now().UnixNano())
	t.events.mu.Unlock()
	t.expiredNow(newly)
	return t.nextExpiry()
}

// nextExpiry is the time until the earliest deadline of an event that has not expired. Activity only moves
// deadlines later, so waking at an old deadline is early, never late; with every event expired it is the
// shortest timeout, which a Resume cannot undercut.
func (t *Task) nextExpiry() time.Duration {
	t.events.mu.Lock()
	defer t.events.mu.Unlock()
	idle := time.Duration(t.tool.opts.clock.Now().UnixNano() - t.lastActivity.Load())
	var next, shortest time.Duration
	for i, d := range t.events.timeouts {
		if d <= 0 {
			continue
		}
		if shortest == 0 || d < shortest {
			shortest = d
		}
		if left := d - idle + time.Nanosecond; !t.events.expired[i] && (next == 0 || left < next) {
			next = max(left, time.Nanosecond)
		}
	}
	if next == 0 {
		next = shortest
	}
	return next
}

func (t *Task) newTimer(d time.Duration) events.Timer { return t.tool.opts.clock.NewTimer(d) }

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
		NewTimer:   t.newTimer,
		State:      &backendState{task: t, key: t.stateKey("receivers/" + name), record: recordReceiver},
		Observe: func(ctx context.Context, fact string, data map[string]any) {
			if data == nil {
				data = map[string]any{}
			}
			data["event"] = name
			t.observe(ctx, fact, "", data)
		},
		Logger: o.logger.With("tool", t.tool.Name(), "task", t.id, "event", name),
		Emit:   func(ctx context.Context, item any, at time.Time) (bool, error) { return t.emit(ctx, i, item, at) },
		Limits: events.Limits{ChannelTTL: o.limits.ChannelTTL, RenewAt: o.limits.RenewAt,
			PollInterval: o.limits.PollInterval, Timeout: t.events.timeouts[i],
			RequestTimeout: o.limits.CallTimeout, ResponseBytes: o.limits.ResponseBytes},
	}
	if leases, ok := o.store.(LeaseStore); ok {
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
	defer t.calls.Done()
	ev := t.tool.events[i]
	pe := &pushedEvent{ev: ev, tried: true, parent: &inbound{received: at, payload: item, item: poll.Fingerprint(item)}}
	pe.event = map[string]any{"payload": item, "name": ev.def.Name}
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
