package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/commonagents-go/tool/allowlist"
	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/store"
)

// The rollout of store mode (docs/scaling.md): every replica first runs with WithRouteIndex, so that every
// growth writes its routes; then one replica calls ReindexRoutes, which writes the routes of the tasks stored
// before and records a marker; a Router turns store mode on (Serve with a Hydrator) only for a Tool whose marker is
// there. An index that a replica without WithRouteIndex could still narrow is never trusted.

// routesMarker is the key of the marker ReindexRoutes records for t.
func routesMarker(t *Tool) string { return "routes/" + t.Namespace() + "/" + t.Name() + "/indexed" }

// ReindexRoutes writes the routes of every task of the tool that the Store holds (WithRouteIndex; the Store must
// be a store.ScanStore), reading their state with one Scan, and then records that the index is complete, which a
// Router needs before it serves the tool in store mode. Run it once every replica runs WithRouteIndex, so that no
// replica still grows an allow list without writing its routes; running it again is harmless. A task's routes
// are written for every event pushed to tasks, whatever its capability includes (the index may name too many
// tasks, never too few). A task whose stored allow list does not decode is reported (task.hydration_failed) and
// skipped: it could not activate anyway. It returns the number of tasks indexed; ctx bounds the call.
func (t *Tool) ReindexRoutes(ctx context.Context) (int, error) {
	if t.routing == nil {
		return 0, errors.New("tool: ReindexRoutes needs WithRouteIndex")
	}
	scan, ok := t.opts.store.(store.ScanStore)
	if !ok {
		return 0, errors.New("tool: ReindexRoutes needs a store.ScanStore")
	}
	prefix := toolPrefix(t)
	entries, err := scan.Scan(ctx, prefix)
	if err != nil {
		return 0, fmt.Errorf("tool: reindex routes: %w", err)
	}
	every := func(int) bool { return true }
	n := 0
	for _, snap := range groupSnapshots(prefix, entries) {
		b, _ := snap.get("allowlist")
		var l allowlist.List
		if err := l.UnmarshalJSON(b); err != nil {
			t.observeTool(ctx, facts.TaskHydrationFailed, snap.id, map[string]any{"error": err.Error()})
			continue
		}
		if err := t.routing.rs.PutRoutes(ctx, prefix+snap.id+"/", t.routing.routes(t, l.Snapshot(), true, every)); err != nil {
			return n, fmt.Errorf("tool: reindex routes of task %s: %w", snap.id, err)
		}
		if err := t.reindexExpiry(ctx, prefix+snap.id+"/", snap); err != nil {
			return n, fmt.Errorf("tool: reindex the expiry of task %s: %w", snap.id, err)
		}
		n++
	}
	if err := t.opts.store.Put(ctx, routesMarker(t), []byte(t.opts.clock.Now().UTC().Format(time.RFC3339))); err != nil {
		return n, fmt.Errorf("tool: reindex routes: record the marker: %w", err)
	}
	return n, nil
}

// reindexed reports whether ReindexRoutes completed for t.
func (t *Tool) reindexed(ctx context.Context) error {
	_, err := t.opts.store.Get(ctx, routesMarker(t))
	switch {
	case errors.Is(err, ErrNotFound):
		return ErrNotReindexed
	case err != nil:
		return fmt.Errorf("tool: router: read the routing index's marker: %w", err)
	}
	return nil
}

// VerifyStored decodes the stored state of every task of the tool (one Scan; the Store must be a store.ScanStore)
// without starting any, for operators of store mode who want the early failure that eager RestoreTasks gave: a
// Router in store mode reads a task only when a webhook needs it. Each task whose allow list or event state does
// not decode is reported (task.hydration_failed) and named in the error; nothing is changed. ctx bounds the call.
func (t *Tool) VerifyStored(ctx context.Context) error {
	scan, ok := t.opts.store.(store.ScanStore)
	if !ok {
		return errors.New("tool: VerifyStored needs a store.ScanStore")
	}
	prefix := toolPrefix(t)
	entries, err := scan.Scan(ctx, prefix)
	if err != nil {
		return fmt.Errorf("tool: verify stored tasks: %w", err)
	}
	var errs []error
	for _, snap := range groupSnapshots(prefix, entries) {
		if err := verifySnapshot(snap); err != nil {
			t.observeTool(ctx, facts.TaskHydrationFailed, snap.id, map[string]any{"error": err.Error()})
			errs = append(errs, fmt.Errorf("task %s: %w", snap.id, err))
		}
	}
	return errors.Join(errs...)
}

// verifySnapshot decodes what restoring a task decodes.
func verifySnapshot(snap *stateSnapshot) error {
	b, _ := snap.get("allowlist")
	var l allowlist.List
	if err := l.UnmarshalJSON(b); err != nil {
		return fmt.Errorf("allow list: %w", err)
	}
	if b, ok := snap.get("events"); ok {
		var s storedEvents
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("decode event state: %w", err)
		}
	}
	return nil
}

// reindexExpiry records the expiry a stored task's event state holds, over a store.TaskExpiryStore.
func (t *Tool) reindexExpiry(ctx context.Context, task string, snap *stateSnapshot) error {
	es := t.taskExpiry()
	b, ok := snap.get("events")
	if es == nil || !ok {
		return nil
	}
	var s storedEvents
	if err := json.Unmarshal(b, &s); err != nil || s.ExpiresAt.IsZero() {
		return nil // an undecodable event state fails the task's hydration, which reports it
	}
	return es.SetTaskExpiry(ctx, task, s.ExpiresAt)
}
