package tool

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/store"
)

// Expiry in store mode (issue 28 with issue 32's TaskConfig.ExpiresAt): a task in memory ends at its expiry by a
// timer (task_lifetime.go), and a stored task that a webhook brings into memory after its expiry is closed at once.
// A task that nothing brings into memory would never end, so a Tool loaded WithRouteIndex over a store.TaskExpiryStore
// also records each task's expiry in the Store's expiry index, and Router.SweepExpired closes the tasks whose
// expiry has passed, reading no other task.

// taskExpiry is the Store's expiry index of a Tool loaded WithRouteIndex; nil when the Store has none.
func (t *Tool) taskExpiry() store.TaskExpiryStore {
	if t.routing == nil {
		return nil
	}
	es, _ := t.opts.store.(store.TaskExpiryStore)
	return es
}

// putExpiry records the task's expiry in the Store's index, before its event state (which holds the expiry
// too) is written: the index may name a task that is gone, which a sweep then skips, never miss one.
func (t *Task) putExpiry(ctx context.Context) error {
	es := t.tool.taskExpiry()
	if es == nil || t.events.expiresAt.IsZero() {
		return nil
	}
	sctx, cancel := t.storeContext(ctx)
	defer cancel()
	if err := es.SetTaskExpiry(sctx, t.prefix, t.events.expiresAt); err != nil {
		t.storeFailed(ctx, "write", recordExpiry, err)
		return fmt.Errorf("tool: task %s: record its expiry: %w", t.id, err)
	}
	return nil
}

// deleteExpiry removes the closed task's expiry record, last: a failure leaves a record a sweep skips.
func (t *Task) deleteExpiry(ctx context.Context) error {
	es := t.tool.taskExpiry()
	if es == nil || t.events.expiresAt.IsZero() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.tool.opts.limits.TeardownTimeout)
	defer cancel()
	if err := es.SetTaskExpiry(ctx, t.prefix, time.Time{}); err != nil {
		t.storeFailed(ctx, "delete", recordExpiry, err)
		return fmt.Errorf("delete the expiry record: %w", err)
	}
	return nil
}

// expiredAt reports whether the task's expiry has passed at now.
func (t *Task) expiredAt(now time.Time) bool {
	exp := t.events.expiresAt
	return !exp.IsZero() && !exp.After(now)
}

// SweepExpired closes the stored tasks whose TaskConfig.ExpiresAt has passed on the Tool's Clock, of every Tool
// the Router serves in store mode, whether or not any replica holds them, and returns how many it closed. A
// Router in store mode brings a task into memory only for a webhook, so a task that no webhook reaches would
// otherwise keep its state and routes for good; call SweepExpired periodically (docs/scaling.md), from any
// replica or from several: a task is closed once.
//
// It reads the Store's expiry index (the Tool must be loaded WithRouteIndex over a store.TaskExpiryStore, such as
// store/postgres; Tool.ReindexRoutes records the expiries of the tasks stored before), one query per page of
// RouterOptions.MaxFanOut tasks, and no task that has not expired. Each expired task is brought into memory with the
// Hydrator's configuration, so that what its backends recorded is torn down, and closed as by Task.Close (the
// task.expired fact): its state, routes and expiry record go. A task the Hydrator declines is left stored and
// not counted; a record whose task the Store no longer holds is removed. Tasks that cannot be closed are named
// in the error, and the sweep goes on with the others; after Close, ErrClosed. ctx bounds the call.
func (r *Router) SweepExpired(ctx context.Context) (int, error) {
	if err := r.enter(); err != nil {
		return 0, err
	}
	defer r.calls.done()
	r.mu.RLock()
	var caches []*taskCache
	for _, rs := range r.tools {
		for _, g := range rs.groups {
			if g.cache != nil {
				caches = append(caches, g.cache)
			}
		}
	}
	r.mu.RUnlock()
	n := 0
	var errs []error
	for _, c := range caches {
		closed, err := c.sweepExpired(ctx, r.fanOut)
		n += closed
		if err != nil {
			errs = append(errs, err)
		}
	}
	return n, errors.Join(errs...)
}

// sweepExpired closes the cache's Tool's expired stored tasks, a page of limit at a time.
func (c *taskCache) sweepExpired(ctx context.Context, limit int) (int, error) {
	es := c.tool.taskExpiry()
	if es == nil {
		return 0, fmt.Errorf("tool: router: sweep expired tasks of %s/%s: the Store keeps no expiry index (store.TaskExpiryStore)",
			c.tool.Namespace(), c.tool.Name())
	}
	prefix := toolPrefix(c.tool)
	now := c.tool.opts.clock.Now()
	n := 0
	var errs []error
	for after := (store.TaskExpiry{}); ; {
		page, err := es.ExpiredTasks(ctx, prefix, now, after, limit)
		if err != nil {
			c.tool.observeTool(ctx, facts.StoreFailed, "", map[string]any{"operation": "read", "record": recordExpiry,
				"error": err.Error()})
			return n, errors.Join(append(errs, fmt.Errorf("tool: router: sweep expired tasks: %w", err))...)
		}
		for _, e := range page {
			id, ok := strings.CutPrefix(e.Task, prefix)
			if !ok {
				continue
			}
			closed, err := c.expire(ctx, strings.TrimSuffix(id, "/"), e, now)
			if closed {
				n++
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
		if len(page) < limit || ctx.Err() != nil {
			return n, errors.Join(errs...)
		}
		after = page[len(page)-1]
	}
}

// expire closes the task id, whose expiry record e has passed at now, and reports whether it did.
func (c *taskCache) expire(ctx context.Context, id string, e store.TaskExpiry, now time.Time) (bool, error) {
	t, release, err := c.task(ctx, taskRef{id: id})
	switch {
	case errors.Is(err, errExpired):
		return true, nil // closed as it was brought into memory
	case errors.Is(err, errGone):
		if err := c.tool.taskExpiry().SetTaskExpiry(ctx, e.Task, time.Time{}); err != nil {
			return false, fmt.Errorf("task %s: remove the expiry record of a task no longer stored: %w", id, err)
		}
		return false, nil
	case errors.Is(err, errSkip):
		return false, nil // declined by the Hydrator
	case err != nil:
		return false, fmt.Errorf("task %s: %w", id, err)
	}
	defer release() // after the close: a lent task is not evicted (detached) meanwhile
	if !t.expiredAt(now) {
		return false, nil // in memory here with a later expiry (its record says so too): its timer ends it
	}
	t.expire() // in memory here, and its timer has not fired yet
	c.forget(t)
	return true, t.closeErr
}
