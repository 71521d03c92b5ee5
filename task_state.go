package tool

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/commonagents-go/tool/store"
)

// Task state lives in the Store under "tasks/<namespace>/<tool>/<task>/" (SPEC §10, §13):
//
//	allowlist        the allow list (package allowlist's JSON form)
//	runtime/<kind>   what a backend keeps for the task, e.g. stateful_session's sessions to destroy
func (t *Task) stateKey(part string) string {
	return t.statePrefix() + part
}

// statePrefix is the prefix of every key of the task's state, computed at its start.
func (t *Task) statePrefix() string { return t.prefix }

// saveAllowList writes the allow list to the Store. Concurrent calls that grew it are written in order, each
// writing at least the state it saw. With a store.SwapStore, which replicas share (SPEC §13), the stored list is merged
// in first and written back by compare-and-swap, so that values another replica added are neither lost nor
// overwritten; they join this task's list (and the routers holding it learn them).
func (t *Task) saveAllowList(ctx context.Context) error {
	t.allowMu.Lock()
	defer t.allowMu.Unlock()
	ctx, cancel := t.storeContext(ctx)
	defer cancel()
	key := t.stateKey("allowlist")
	swap, shared := t.tool.opts.store.(store.SwapStore)
	if !shared {
		b, err := t.allow.MarshalJSON()
		if err != nil {
			return err
		}
		if err := t.tool.opts.store.Put(ctx, key, b); err != nil {
			return fmt.Errorf("store allow list: %w", err)
		}
		return nil
	}
	for {
		old, err := swap.Get(ctx, key)
		switch {
		case errors.Is(err, ErrNotFound):
			old = nil
		case err != nil:
			return fmt.Errorf("store allow list: %w", err)
		default:
			added, err := t.allow.Rebase(old)
			if err != nil {
				return fmt.Errorf("store allow list: %w", err)
			}
			if len(added) > 0 {
				grown := make(map[string]any, len(added))
				for name, vals := range added {
					grown[name] = vals[len(vals)-1]
				}
				t.notifyGrown(grown, nil)
			}
		}
		next, err := t.allow.MarshalJSON()
		if err != nil {
			return err
		}
		if string(next) == string(old) {
			return nil
		}
		ok, err := swap.CompareAndSwap(ctx, key, old, next)
		if err != nil {
			return fmt.Errorf("store allow list: %w", err)
		}
		if ok {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("store allow list: %w", err)
		}
	}
}

// storeContext bounds a write of task state by the caller's deadline (else the call timeout), but not by its
// cancellation: a call cancelled right after the allow list grew, or a Sink's context ending right after it
// accepted, must still record what happened.
func (t *Task) storeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if t.snap != nil { // resumed from a snapshot: reads do no I/O, and the writes come after it is dropped
		return ctx, func() {}
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(t.tool.opts.limits.CallTimeout)
	}
	return context.WithDeadline(context.WithoutCancel(ctx), deadline)
}

// deleteState removes what the task keeps in the Store, except the state of the backends in keep, whose teardown
// did not complete (a session still to destroy must stay recorded, SPEC §7.4).
func (t *Task) deleteState(ctx context.Context, keep map[string]bool) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.tool.opts.limits.TeardownTimeout)
	defer cancel()
	store := t.tool.opts.store
	keys, err := store.List(ctx, t.statePrefix())
	if err != nil {
		return fmt.Errorf("list task state: %w", err)
	}
	var errs []error
	for _, k := range keys {
		if kind, ok := strings.CutPrefix(k, t.stateKey("runtime/")); ok && keep[kind] {
			continue
		}
		if err := store.Delete(ctx, k); err != nil {
			errs = append(errs, fmt.Errorf("delete task state %s: %w", k, err))
		}
	}
	return errors.Join(errs...)
}

// backendState is a backend's or a background event's slot in the task state (runtime.State). Failures are
// reported as store.failed facts, besides being returned.
type backendState struct {
	task   *Task
	key    string
	record string // recordBackend or recordReceiver
}

func (s *backendState) Load(ctx context.Context) ([]byte, error) {
	b, err := s.task.tool.opts.store.Get(ctx, s.key)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		s.task.storeFailed(ctx, "read", s.record, err)
	}
	return b, err
}

func (s *backendState) Save(ctx context.Context, value []byte) error {
	err := s.task.tool.opts.store.Put(ctx, s.key, value)
	if err != nil {
		s.task.storeFailed(ctx, "write", s.record, err)
	}
	return err
}

// reread merges the stored allow list into the task's (Rebase), for a copy that another replica's growth made
// stale: the values it added join this list. ErrNotFound when the Store no longer holds the task.
func (t *Task) reread(ctx context.Context) error {
	t.allowMu.Lock()
	defer t.allowMu.Unlock()
	b, err := t.tool.opts.store.Get(ctx, t.stateKey("allowlist"))
	if err != nil {
		return err
	}
	added, err := t.allow.Rebase(b)
	if err != nil {
		return err
	}
	if len(added) > 0 {
		grown := make(map[string]any, len(added))
		for name, vals := range added {
			grown[name] = vals[len(vals)-1]
		}
		t.notifyGrown(grown, nil)
	}
	return nil
}
