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
	defer t.leave()
	return t.events.interrupt(ctx)
}

// Resume restores the subscriptions that Interrupt removed and those that expired, and records activity. It
// returns ErrClosed on a closed task.
func (t *Task) Resume(ctx context.Context) error {
	if err := t.enter(); err != nil {
		return err
	}
	defer t.leave()
	return t.events.resume(ctx)
}

// interrupt cancels the interruptible calls, stops the workers and persists the flag.
func (e *taskEvents) interrupt(ctx context.Context) error {
	e.mu.Lock()
	e.interrupted.Store(true)
	cancels := e.cancels
	e.cancels = nil
	e.mu.Unlock()
	for _, cancel := range cancels {
		cancel(ErrInterrupted)
	}
	e.seam.observe(ctx, facts.TaskInterrupted, "", map[string]any{"cancelled_calls": len(cancels)})
	err := e.stopWorkers(ctx, events.StopInterrupted, all)
	return errors.Join(err, e.save(ctx))
}

// resume lifts the interruption and every expiry, records activity and starts the workers again.
func (e *taskEvents) resume(ctx context.Context) error {
	e.mu.Lock()
	e.interrupted.Store(false)
	clear(e.expired)
	e.lastActivity.Store(e.tool.opts.clock.Now().UnixNano())
	e.mu.Unlock()
	e.seam.observe(ctx, facts.TaskResumed, "", nil)
	err := e.save(ctx)
	e.stopWatchdog(ctx) // its next wake-up may be later than the deadlines Resume just set
	e.startWorkers()
	return err
}

// interruptible registers the cancel function of a running call that Interrupt must cancel; the returned
// function unregisters it. While the task is interrupted, such a call is cancelled at once.
func (e *taskEvents) interruptible(cancel context.CancelCauseFunc) (unregister func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cancels == nil {
		e.cancels = map[uint64]context.CancelCauseFunc{}
	}
	if e.interrupted.Load() { // interrupted while the call was getting ready: it must not run
		cancel(ErrInterrupted)
		return func() {}
	}
	e.cancelSeq++
	id := e.cancelSeq
	e.cancels[id] = cancel
	return func() {
		e.mu.Lock()
		delete(e.cancels, id)
		e.mu.Unlock()
	}
}
