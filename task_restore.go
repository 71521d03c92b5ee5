package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/commonagents-go/tool/allowlist"
	"github.com/commonagents-go/tool/events"
	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/runtime"
)

// RestoreTask rebuilds the task cfg.ID from the Store after a host restart (SPEC §13), with the configuration the
// host gives now (bindings, Sink, ...), checked as NewTask checks it:
//
//   - the allow list is the stored one, except sealed entries, which are the bindings given now (a stored sealed
//     value that differs, or whose name is no longer bound, is dropped and named in the task.restored fact);
//   - interrupted and expired events, and the last activity (so timeouts run on), are restored;
//   - delivery ids stay deduplicated (they are read from the Store);
//   - backends that recorded state (stateful_session's sessions) are resumed at once, so that Close destroys what
//     the earlier process created even if no call uses them again;
//   - subscriptions and polls start from their records: a channel still valid is renewed when due (an expired one
//     is subscribed again and the old one removed), a poll continues from its watermark and seen items.
//
// A task the Store does not hold is an error wrapping ErrNotFound. Several replicas sharing a Store may each
// restore the same task: with a store.LeaseStore only one of them fetches and renews at a time.
func (t *Tool) RestoreTask(ctx context.Context, cfg TaskConfig) (*Task, error) {
	if cfg.ID == "" {
		return nil, errors.New("tool: restore task: TaskConfig.ID must name the stored task")
	}
	task, err := t.startTask(ctx, cfg, true, nil)
	return task, t.startFailed(cfg, err)
}

// fresh checks that the Store holds no task under t's ID.
func (t *Task) fresh(ctx context.Context) error {
	sctx, cancel := t.storeContext(ctx)
	defer cancel()
	_, err := t.tool.opts.store.Get(sctx, t.stateKey("allowlist"))
	switch {
	case err == nil:
		return fmt.Errorf("%w: %q of tool %s/%s", ErrTaskExists, t.id, t.tool.Namespace(), t.tool.Name())
	case errors.Is(err, ErrNotFound):
		return nil
	}
	return fmt.Errorf("tool: new task %s: %w", t.id, err)
}

// restore loads the task's stored state into t, which holds the fresh configuration.
func (t *Task) restore(ctx context.Context) error {
	sctx, cancel := t.storeContext(ctx)
	defer cancel()
	b, err := t.readState(sctx, "allowlist")
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("the Store holds no task %q of tool %s/%s: %w", t.id, t.tool.Namespace(), t.tool.Name(), ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("read allow list: %w", err)
	}
	restored, err := t.allow.RestoreFrom(b) // decoded once: the stored list and its sealed values
	if err != nil {
		return err
	}
	t.allowKept = restored.Unchanged
	if err := t.restoreEvents(sctx); err != nil {
		return err
	}
	t.retireReceivers(ctx)
	kinds, err := t.resumeBackends(ctx)
	if err != nil {
		return err
	}
	if t.tool.opts.observer == nil { // the fact's details are computed only for an Observer
		return nil
	}
	var dropped []string
	for name, v := range restored.Sealed() {
		if bound, ok := t.bindings[name]; !ok || allowlist.Canonical(bound) != allowlist.Canonical(v) {
			dropped = append(dropped, name)
		}
	}
	slices.Sort(dropped)
	t.observe(ctx, facts.TaskRestored, "", map[string]any{"dropped_sealed": dropped, "backends": kinds,
		"last_activity_at": time.Unix(0, t.events.lastActivity.Load()).UTC().Format(time.RFC3339Nano)})
	return nil
}

// restoreEvents loads the interrupted flag, the expired events and the last activity.
func (t *Task) restoreEvents(ctx context.Context) error {
	b, err := t.readState(ctx, "events")
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read event state: %w", err)
	}
	var s storedEvents
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("decode event state: %w", err)
	}
	t.events.restore(s)
	t.events.saveMu.Lock()
	t.events.lastStored = b
	t.events.saveMu.Unlock()
	return nil
}

// retireReceivers removes what the earlier process registered for background events this task will not run: an
// event the capability no longer includes, that expired or whose task is interrupted is retired (a subscription
// unsubscribes its recorded channels, within the teardown bound); records of events the manifest no longer has
// cannot be acted on and are reported as "subscription.orphaned" facts.
func (t *Task) retireReceivers(ctx context.Context) {
	sctx, cancel := t.storeContext(ctx)
	defer cancel()
	names, err := t.listState(sctx, "receivers/")
	if err != nil {
		t.storeFailed(ctx, "list", recordReceiver, err)
		return
	}
	for _, name := range names {
		i := slices.IndexFunc(t.tool.events, func(ev *event) bool { return ev.def.Name == name })
		if i < 0 {
			t.observe(ctx, facts.SubscriptionOrphaned, "", map[string]any{"event": name,
				"detail": "the manifest has no such event any more: what it registered cannot be removed"})
			continue
		}
		reason := t.events.idleReason(i)
		if reason == "" {
			continue // its worker runs and takes the records over
		}
		if r, ok := t.tool.events[i].prepared.(events.Retirer); ok {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.tool.opts.limits.TeardownTimeout)
			_ = r.Retire(rctx, t.host(i), reason)
			cancel()
		}
	}
}

// resumeBackends resumes the backends that recorded state and can resume (runtime.Resumer), and returns their
// kinds. Backends that recorded state but cannot resume initialize as usual on their next call.
func (t *Task) resumeBackends(ctx context.Context) ([]string, error) {
	sctx, cancel := t.storeContext(ctx)
	defer cancel()
	stored, err := t.listState(sctx, "runtime/")
	if err != nil {
		return nil, fmt.Errorf("list backend state: %w", err)
	}
	var kinds []string
	for _, kind := range stored {
		backend, ok := t.tool.opts.runtimes.Lookup(kind)
		r, canResume := backend.(runtime.Resumer)
		actions := t.tool.preparedOf(kind)
		if !ok || len(actions) == 0 {
			t.observe(ctx, facts.RuntimeStateOrphaned, "", map[string]any{"backend": kind,
				"detail": "no action of the manifest runs on this backend any more: what its state records is not torn down"})
			continue
		}
		if !canResume {
			continue // it initializes as usual on its next call
		}
		in := t.initFor(ctx, t.tool.firstOf(kind), &runtime.Call{Args: t.boundParams()})
		in.Action = nil
		inst, err := r.Resume(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("resume %s: %w", kind, err)
		}
		done := make(chan struct{})
		close(done)
		t.mu.Lock()
		t.instances[kind] = &instance{done: done, inst: inst}
		t.mu.Unlock()
		kinds = append(kinds, kind)
	}
	return kinds, nil
}

// boundParams are the parameters known without a call — the bindings, with the root's defaults — which a
// resumed backend and the background events render with.
func (t *Task) boundParams() map[string]any {
	if t.tool.rootParams == nil {
		return t.bindings
	}
	return t.tool.rootParams.ApplyDefaults(t.bindings)
}

// preparedOf returns the prepared actions that run on backend kind.
func (t *Tool) preparedOf(kind string) []runtime.Action {
	var out []runtime.Action
	for _, a := range t.actions {
		if a.kind == kind {
			out = append(out, a.prepared)
		}
	}
	return out
}

// firstOf returns the first action that runs on backend kind; nil when none does.
func (t *Tool) firstOf(kind string) *action {
	for _, a := range t.actions {
		if a.kind == kind {
			return a
		}
	}
	return nil
}
