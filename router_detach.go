package tool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/commonagents-go/tool/facts"
)

// How a Router in store mode sends tasks out of memory (issue 42): no webhook waits on another task's I/O, and
// nothing waits on I/O under the Router's lock. The tasks a cache evicts, and the older copy that Router.Add
// replaces, go to the Router's detacher, whose goroutine detaches them one after another while there are any;
// Router.Close stops it and detaches what the caches still hold.

// Why a task leaves a Router's memory: the reason of facts.TaskDetachFailed.
const (
	reasonEvicted  = "evicted"       // the cache's bounds
	reasonReplaced = "replaced"      // Router.Add pinned another copy
	reasonClosed   = "router_closed" // Router.Close
)

// detacher detaches tasks in a goroutine of its own, which runs while it has tasks to detach: a Router that evicts
// nothing runs no goroutine. A task that is brought into memory again while its evicted copy is still on its way
// out waits for that copy first (settle), so that it reads what the copy wrote. It is safe for concurrent use.
type detacher struct {
	ctx    context.Context // the goroutine's: cancelled when Close's ctx ends before the goroutine does
	cancel context.CancelFunc

	mu      sync.Mutex
	queue   []*leaving
	pending map[taskKey][]*leaving // the queue's tasks and the one being detached, by key
	closed  bool                   // by close: the goroutine starts no more
	done    chan struct{}          // closed when the goroutine ends; nil while none runs
}

// leaving is a task on its way out of memory, and why.
type leaving struct {
	task   *Task
	reason string
	taken  bool          // under the detacher's mu: someone detaches it
	gone   chan struct{} // closed once it is detached
}

func newDetacher() *detacher {
	ctx, cancel := context.WithCancel(context.Background())
	return &detacher{ctx: ctx, cancel: cancel, pending: map[taskKey][]*leaving{}}
}

// add has tasks detached in the detacher's goroutine, starting it when none runs. Once the detacher is closed,
// which only a call that outlived Router.Close's ctx can meet, add detaches them itself.
func (d *detacher) add(reason string, tasks ...*Task) {
	if len(tasks) == 0 {
		return
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		for _, t := range tasks {
			_ = d.detach(d.ctx, t, reason)
		}
		return
	}
	for _, t := range tasks {
		l := &leaving{task: t, reason: reason, gone: make(chan struct{})}
		d.queue = append(d.queue, l)
		d.pending[keyOf(t)] = append(d.pending[keyOf(t)], l)
	}
	if d.done == nil {
		d.done = make(chan struct{})
		go d.run(d.done)
	}
	d.mu.Unlock()
}

// run detaches the queued tasks, oldest first, until the queue is empty or the detacher closed (close takes
// what is left).
func (d *detacher) run(done chan struct{}) {
	defer close(done)
	for {
		d.mu.Lock()
		if len(d.queue) == 0 || d.closed {
			d.queue, d.done = nil, nil
			d.mu.Unlock()
			return
		}
		l := d.queue[0]
		d.queue = d.queue[1:]
		taken := l.taken
		l.taken = true
		d.mu.Unlock()
		if !taken { // else settle detaches it
			_ = d.finish(d.ctx, l)
		}
	}
}

// finish detaches l, which the caller has taken, drops it from pending, and returns the detach's error.
func (d *detacher) finish(ctx context.Context, l *leaving) error {
	err := d.detach(ctx, l.task, l.reason)
	d.mu.Lock()
	key := keyOf(l.task)
	if rest := slices.DeleteFunc(d.pending[key], func(x *leaving) bool { return x == l }); len(rest) > 0 {
		d.pending[key] = rest
	} else {
		delete(d.pending, key)
	}
	d.mu.Unlock()
	close(l.gone)
	return err
}

// settle returns once no copy of the task key names is on its way out of memory: a copy still queued is detached
// here, by the caller, which is about to read that task from the Store (its own task, not another's); a copy the
// goroutine is detaching is waited for, as long as ctx allows.
func (d *detacher) settle(ctx context.Context, key taskKey) error {
	d.mu.Lock()
	copies := slices.Clone(d.pending[key])
	var mine []*leaving
	for _, l := range copies {
		if !l.taken {
			l.taken = true
			mine = append(mine, l)
		}
	}
	d.mu.Unlock()
	for _, l := range mine {
		_ = d.finish(ctx, l) // reported as a fact; the task is read from the Store either way
	}
	for _, l := range copies {
		select {
		case <-l.gone:
		case <-ctx.Done():
			return fmt.Errorf("%w: task %s: its evicted copy is still being detached: %w", ErrNotAccepted, key.id,
				context.Cause(ctx))
		}
	}
	return nil
}

// close stops the goroutine, once the task it is detaching is done, and returns the tasks it had not taken yet
// (taken now: the caller detaches them with finish). When ctx ends first, the goroutine's context is cancelled:
// that task's calls are no longer waited for, and its detach keeps the teardown bound.
func (d *detacher) close(ctx context.Context) []*leaving {
	d.mu.Lock()
	d.closed = true
	var left []*leaving
	for _, l := range d.queue {
		if !l.taken {
			l.taken = true
			left = append(left, l)
		}
	}
	d.queue = nil
	done := d.done
	d.mu.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			d.cancel()
			<-done
		}
	}
	d.cancel()
	return left
}

// detach sends t out of memory: Task.Detach, which leaves its state in the Store for the next hydration, or,
// for a task whose ExpiresAt has passed and whose timer has not fired yet, the close its timer would make. Both
// are bounded by the teardown bound as well as ctx. A failure is reported (facts.TaskDetachFailed) and returned.
func (d *detacher) detach(ctx context.Context, t *Task, reason string) error {
	if t.isClosed() {
		return nil // it ended meanwhile (closed, expired): nothing of it is left here
	}
	ctx, cancel := context.WithTimeout(ctx, t.tool.opts.limits.TeardownTimeout)
	defer cancel()
	expired := t.expiredAt(t.tool.opts.clock.Now())
	var err error
	if expired {
		t.expire()
		err = t.Close(ctx) // the result of expire's close
	} else {
		err = t.Detach(ctx)
	}
	if err != nil {
		t.observe(ctx, facts.TaskDetachFailed, "", map[string]any{"error": err.Error(), "reason": reason,
			"expired": expired})
	}
	return err
}

// closeParallel is how many tasks Router.Close detaches at once: their Store writes and teardowns overlap.
const closeParallel = 8

// enter registers a Dispatch, Task, CloseTask or SweepExpired in progress, which Close waits for; it fails with
// ErrClosed once the Router is closed.
func (r *Router) enter() error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.ended {
		return fmt.Errorf("tool: router: %w", ErrClosed)
	}
	r.calls.add()
	return nil
}

// Close ends the Router, as a replica that shuts down does. From then on it takes no more webhooks (Dispatch's
// error wraps ErrNotAccepted and ErrClosed, and ServeHTTP answers 503, so that the sender retries at another
// replica), calls (Task, CloseTask, SweepExpired) or tasks (Add, Serve): they fail with ErrClosed. Close waits,
// as long as ctx allows, for the webhooks and calls in progress, then detaches every task the Router brought into
// memory in store mode (Task.Detach: the process-local backends end, the state stays in the Store for another
// replica; a task past its ExpiresAt is closed): those its caches hold, lent ones included, and those they evicted
// and had not detached yet. Tasks given to Add are the host's: the Router stops routing to them and leaves them
// running.
//
// When ctx ends first, Close still detaches what is left, each detach bounded by Limits.TeardownTimeout (a Store
// write past ctx's deadline fails), so that it returns with no goroutine of the Router's running. A task that
// does not detach cleanly is reported (facts.TaskDetachFailed) and named in the error, which also wraps ctx's
// error when webhooks or calls were still in progress. Later calls of Close return nil.
func (r *Router) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.ended {
		r.mu.Unlock()
		return nil
	}
	r.ended = true
	var caches []*taskCache
	for _, rs := range r.tools {
		for _, g := range rs.groups {
			if g.cache != nil {
				caches = append(caches, g.cache)
			}
		}
	}
	added := r.tasks
	r.tasks = map[taskKey]*routed{}
	r.mu.Unlock()
	for _, rt := range added {
		rt.task.unwatch(r)
	}
	var errs []error
	if !r.calls.wait(ctx) {
		errs = append(errs, fmt.Errorf("tool: router: close: webhooks or calls still in progress: %w", ctx.Err()))
	}
	left := r.evicted.close(ctx)
	for _, c := range caches {
		for _, t := range c.drain() {
			left = append(left, &leaving{task: t, reason: reasonClosed, taken: true, gone: make(chan struct{})})
		}
	}
	return errors.Join(append(errs, r.detachAll(ctx, left))...)
}

// detachAll detaches the tasks of left, closeParallel at a time, and returns their errors.
func (r *Router) detachAll(ctx context.Context, left []*leaving) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	slots := make(chan struct{}, closeParallel)
	for _, l := range left {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			if err := r.evicted.finish(ctx, l); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
