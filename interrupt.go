package tool

import (
	"context"
	"errors"

	"github.com/commonagents-go/tool/events"
	"github.com/commonagents-go/tool/facts"
)

// Interrupt removes the task's subscriptions (SPEC §9.5, §11): pushed payloads are discarded as interrupted
// until Resume, and running calls of actions whose interrupt_behavior is cancel are cancelled (they return
// ErrInterrupted); the others finish. It returns ErrClosed on a closed task.
func (t *Task) Interrupt(ctx context.Context) error {
	if err := t.enter(); err != nil {
		return err
	}
	defer t.calls.Done()
	t.events.mu.Lock()
	t.events.interrupted.Store(true)
	cancels := t.events.cancels
	t.events.cancels = nil
	t.events.mu.Unlock()
	for _, cancel := range cancels {
		cancel(ErrInterrupted)
	}
	t.observe(ctx, facts.TaskInterrupted, "", map[string]any{"cancelled_calls": len(cancels)})
	err := t.stopWorkers(ctx, events.StopInterrupted, all)
	return errors.Join(err, t.saveEvents(ctx))
}

// Resume restores the subscriptions that Interrupt removed and those that expired, and records activity. It
// returns ErrClosed on a closed task.
func (t *Task) Resume(ctx context.Context) error {
	if err := t.enter(); err != nil {
		return err
	}
	defer t.calls.Done()
	t.events.mu.Lock()
	t.events.interrupted.Store(false)
	clear(t.events.expired)
	t.lastActivity.Store(t.tool.opts.clock.Now().UnixNano())
	t.events.mu.Unlock()
	t.observe(ctx, facts.TaskResumed, "", nil)
	err := t.saveEvents(ctx)
	t.stopWatchdog(ctx) // its next wake-up may be later than the deadlines Resume just set
	t.startWorkers()
	return err
}

func (t *Task) isInterrupted() bool { return t.events.interrupted.Load() }

// interruptible registers the cancel function of a running call that Interrupt must cancel; the returned
// function unregisters it. While the task is interrupted, such a call is cancelled at once.
func (t *Task) interruptible(cancel context.CancelCauseFunc) (unregister func()) {
	t.events.mu.Lock()
	defer t.events.mu.Unlock()
	if t.events.cancels == nil {
		t.events.cancels = map[uint64]context.CancelCauseFunc{}
	}
	if t.events.interrupted.Load() { // interrupted while the call was getting ready: it must not run
		cancel(ErrInterrupted)
		return func() {}
	}
	t.events.cancelSeq++
	id := t.events.cancelSeq
	t.events.cancels[id] = cancel
	return func() {
		t.events.mu.Lock()
		delete(t.events.cancels, id)
		t.events.mu.Unlock()
	}
}
