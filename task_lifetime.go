package tool

import (
	"context"
	"fmt"
	"time"

	"github.com/commonagents-go/tool/facts"
)

// A task's life (README, "The task's life"): it starts with NewTask, RestoreTask or RestoreTasks, whose ctx bounds
// only that call, and ends with Close or Detach, or by itself at TaskConfig.ExpiresAt.

// lifetime arms the task's end at its expiry, once it has started. A restored task whose expiry has passed is
// closed at once and ErrTaskExpired returned.
func (t *Task) lifetime() error {
	exp := t.events.expiresAt
	if !exp.IsZero() && !exp.After(t.tool.opts.clock.Now()) {
		t.expire()
		return fmt.Errorf("%w: %s of tool %s/%s at %s", ErrTaskExpired, t.id, t.tool.Namespace(), t.tool.Name(),
			exp.UTC().Format(time.RFC3339))
	}
	if exp.IsZero() {
		return nil
	}
	// Armed under mu, which close takes first: a timer that fires at once finds stop in place.
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stop = afterFunc(t.tool.opts.clock, exp.Sub(t.tool.opts.clock.Now()), t.expire)
	return nil
}

// expire ends the task at its ExpiresAt.
func (t *Task) expire() {
	t.closeBounded(func(ctx context.Context) {
		t.observe(ctx, facts.TaskExpired, "", map[string]any{
			"expires_at": t.events.expiresAt.UTC().Format(time.RFC3339Nano)})
	})
}

// closeBounded closes the task from a timer or watch, within the teardown bound; before, when not nil, runs first
// once the close is certain to be this one.
func (t *Task) closeBounded(before func(ctx context.Context)) {
	ctx, cancel := context.WithTimeout(context.Background(), t.tool.opts.limits.TeardownTimeout)
	defer cancel()
	t.closeOnce.Do(func() {
		if before != nil {
			before(ctx)
		}
		t.closeErr = t.close(ctx, false)
	})
}

// afterFunc runs f once d has passed on clock, in its own goroutine; the returned stop prevents it. The system
// clock's timer needs no goroutine while it waits, which keeps a dormant task free of goroutines.
func afterFunc(clock Clock, d time.Duration, f func()) (stop func() bool) {
	if _, ok := clock.(SystemClock); ok {
		return time.AfterFunc(d, f).Stop
	}
	timer := clock.NewTimer(d)
	done := make(chan struct{})
	go func() {
		select {
		case <-timer.C():
			f()
		case <-done:
		}
	}()
	return func() bool {
		pending := timer.Stop()
		select {
		case <-done:
		default:
			close(done)
		}
		return pending
	}
}
