package tool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/commonagents-go/tool/facts"
)

// A task's life (README, "The task's life"): it starts with NewTask, RestoreTask or RestoreTasks, whose ctx bounds
// only that call, and ends with Close or Detach, or by itself at TaskConfig.ExpiresAt. WithContextLifetime keeps,
// for one release, the earlier rule that the starting ctx's end closes the task.

// ErrTaskExpired is returned by RestoreTask for a task whose ExpiresAt has passed: the task was closed (its
// backends torn down, its state removed) instead of being restored.
var ErrTaskExpired = errors.New("tool: task expired")

// WithContextLifetime restores the former rule for the tasks of this Tool: the context given to NewTask,
// RestoreTask or RestoreTasks bounds the task's life, and when it ends (a cancel, a deadline) the task closes itself
// as by Close, deleting its stored state. Each task started so that way with a context that can end reports the
// task.context_lifetime fact, and the Tool logs one warning.
//
// Deprecated: give the task an explicit end with TaskConfig.ExpiresAt, and end it with Task.Close. This option
// goes in the next release.
func WithContextLifetime() Option {
	return func(o *options) error {
		o.contextLifetime = true
		return nil
	}
}

// lifetime arms the task's end, once it has started: its expiry, and with WithContextLifetime the end of ctx. A
// restored task whose expiry has passed is closed at once and ErrTaskExpired returned.
func (t *Task) lifetime(ctx context.Context) error {
	exp := t.events.expiresAt
	if !exp.IsZero() && !exp.After(t.tool.opts.clock.Now()) {
		t.expire()
		return fmt.Errorf("%w: %s of tool %s/%s at %s", ErrTaskExpired, t.id, t.tool.Namespace(), t.tool.Name(),
			exp.UTC().Format(time.RFC3339))
	}
	watch := t.tool.opts.contextLifetime && ctx.Done() != nil // a context that can never end needs no watch
	if watch {
		t.tool.warnContextLifetime()
		data := map[string]any{}
		if dl, ok := ctx.Deadline(); ok {
			data["deadline"] = dl.UTC().Format(time.RFC3339Nano)
		}
		t.observe(ctx, facts.TaskContextLifetime, "", data)
	}
	if exp.IsZero() && !watch {
		return nil
	}
	// Armed under mu, which close takes first: a timer that fires at once finds stop in place.
	t.mu.Lock()
	defer t.mu.Unlock()
	var stops []func() bool
	if !exp.IsZero() {
		stops = append(stops, afterFunc(t.tool.opts.clock, exp.Sub(t.tool.opts.clock.Now()), t.expire))
	}
	if watch {
		stops = append(stops, context.AfterFunc(ctx, func() { t.closeBounded(nil) }))
	}
	t.stop = stops[0]
	if len(stops) == 2 {
		t.stop = func() bool { a, b := stops[0](), stops[1](); return a || b }
	}
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

// warnContextLifetime logs, once per Tool, that WithContextLifetime is in use.
func (t *Tool) warnContextLifetime() {
	t.contextLifetimeWarned.Do(func() {
		t.opts.logger.Warn("tool: WithContextLifetime is deprecated: a task's starting context will no longer end "+
			"it; give TaskConfig.ExpiresAt and call Task.Close", "tool", t.Namespace()+"/"+t.Name())
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
