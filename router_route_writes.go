package tool

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/commonagents-go/tool/allowlist"
	"github.com/commonagents-go/tool/store"
)

// Store mode, the task's side (issue 28): a task of a Tool loaded WithRouteIndex keeps its routes in the Store's
// routing index (store.RouteStore), so that any replica finds it from a webhook without holding it. The index may
// name too many tasks, never too few, so the order of the writes on growth is fixed (docs/scaling.md):
//
//  1. PutRoutes of the values the call adds, before the list holds them: a failure fails the call, recoverably,
//     before its backend runs, and nothing grew;
//  2. the allow list, stored by compare-and-swap (saveAllowList);
//  3. BumpGeneration, after the list: a replica that sees generation g reads a list at least as new as g, and
//     re-reads its cached copy when its generation is older;
//  4. DeleteRoutes of the values the caps evicted and the list no longer holds (a failure only widens the index).

// routing is what a Tool loaded WithRouteIndex writes: for each event pushed to tasks, the parameters its
// filter compares with equality. Routes of events that are not pushed (polls) are never looked up.
type routing struct {
	rs     store.RouteStore
	events []routedEvent // by event index
}

// routedEvent is one event's share of the index.
type routedEvent struct {
	pushed bool
	// params are the parameters the event's equality conjuncts compare; empty: the event has a broadcast route,
	// which every task including it holds.
	params []string
}

// newRouting reads t's filters; nil when t does not write routes.
func newRouting(t *Tool) *routing {
	rs, ok := t.opts.store.(store.RouteStore)
	if !t.opts.routeIndex || !ok {
		return nil
	}
	r := &routing{rs: rs, events: make([]routedEvent, len(t.events))}
	for i, ev := range t.events {
		re := routedEvent{pushed: ev.pushed}
		if ev.filter != nil {
			seen := map[string]bool{}
			for _, conj := range ev.filter.Program().EqualityConjuncts() {
				if !seen[conj.Param] {
					seen[conj.Param] = true
					re.params = append(re.params, conj.Param)
				}
			}
		}
		r.events[i] = re
	}
	return r
}

// routeKey is the route of a value of a parameter an event's filter compares: a hash, so that routes have one
// size whatever the values, and values stay out of the index.
func routeKey(namespace, tool, event, param, text string) []byte {
	h := sha256.New()
	for _, s := range []string{namespace + "/" + tool, event, param} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	h.Write([]byte(text))
	return h.Sum(nil)[:16]
}

// broadcastKey is the route of an event that no conjunct narrows: every task including it holds it.
func broadcastKey(namespace, tool, event string) []byte {
	h := sha256.New()
	h.Write([]byte(namespace + "/" + tool))
	h.Write([]byte{0})
	h.Write([]byte(event))
	h.Write([]byte{0, 1}) // no parameter name holds byte 1 after a 0: no routeKey collides by construction
	return h.Sum(nil)[:16]
}

// taskRoutes is a task's bookkeeping of its routes.
type taskRoutes struct {
	mu sync.Mutex // serialises steps 1 and 4, so that an eviction never deletes a route a concurrent call just put
	// owed: a generation bump failed; the next growing call bumps even when it adds nothing.
	owed atomic.Bool
}

// routesOf returns the task's routes for values (parameter → canonical texts), for the events its capability
// includes; with broadcast, the broadcast routes of its included unnarrowed events too.
func (t *Task) routesOf(values map[string][]string, broadcast bool) [][]byte {
	return t.tool.routing.routes(t.tool, values, broadcast, func(i int) bool { return t.events.included[i] })
}

// routes returns the routes of values for the pushed events for which included reports true.
func (r *routing) routes(t *Tool, values map[string][]string, broadcast bool, included func(i int) bool) [][]byte {
	ns, name := t.Namespace(), t.Name()
	var out [][]byte
	for i, re := range r.events {
		if !re.pushed || !included(i) {
			continue
		}
		ev := t.events[i].def.Name
		if len(re.params) == 0 {
			if broadcast {
				out = append(out, broadcastKey(ns, name, ev))
			}
			continue
		}
		for _, p := range re.params {
			for _, text := range values[p] {
				out = append(out, routeKey(ns, name, ev, p, text))
			}
		}
	}
	return out
}

// putAllRoutes writes every route of the task as its list is now (step 1 for a list written whole).
func (t *Task) putAllRoutes(ctx context.Context) error {
	if t.tool.routing == nil {
		return nil
	}
	if err := t.tool.routing.rs.PutRoutes(ctx, t.prefix, t.routesOf(t.allow.Snapshot(), true)); err != nil {
		return fmt.Errorf("store routes: %w", err)
	}
	return nil
}

// growRouted is Task.grow in store mode: the four steps above. It fails (and nothing grew) only when the routes
// of the new values could not be written; the call must then not run.
func (t *Task) growRouted(ctx context.Context, callID string, resolved map[string]any) error {
	t.routes.mu.Lock()
	absent := t.allow.Absent(resolved)
	if len(absent) > 0 {
		values := make(map[string][]string, len(absent))
		for name, text := range absent {
			values[name] = []string{text}
		}
		if routes := t.routesOf(values, false); len(routes) > 0 {
			sctx, cancel := t.storeContext(ctx)
			err := t.tool.routing.rs.PutRoutes(sctx, t.prefix, routes)
			cancel()
			if err != nil {
				t.routes.mu.Unlock()
				t.storeFailed(ctx, "write", recordRoutes, err)
				return err
			}
		}
	}
	changed, evicted := t.allow.AddAll(resolved)
	t.routes.mu.Unlock()
	if changed {
		t.reportGrowth(ctx, callID, resolved, evicted)
	}
	if !changed && !t.routes.owed.Load() {
		return nil
	}
	// The list and the generation are what other replicas read: until both are written, the call may not run,
	// and the next growing call writes them even when it adds nothing.
	t.routes.owed.Store(true)
	if err := t.saveAllowList(ctx); err != nil {
		t.storeFailed(ctx, "write", recordAllowList, err)
		return err
	}
	sctx, cancel := t.storeContext(ctx)
	defer cancel()
	if _, err := t.tool.routing.rs.BumpGeneration(sctx, t.prefix); err != nil {
		t.storeFailed(ctx, "write", recordRoutes, err)
		return err
	}
	t.routes.owed.Store(false)
	t.deleteEvicted(ctx, evicted)
	return nil
}

// deleteEvicted removes the routes of evicted values the list no longer holds (step 4).
func (t *Task) deleteEvicted(ctx context.Context, evicted map[string][]string) {
	if len(evicted) == 0 {
		return
	}
	t.routes.mu.Lock()
	defer t.routes.mu.Unlock()
	gone := map[string][]string{}
	for name, texts := range evicted {
		for _, text := range texts {
			if !t.allow.Holds(name, text) {
				gone[name] = append(gone[name], text)
			}
		}
	}
	routes := t.routesOf(gone, false)
	if len(routes) == 0 {
		return
	}
	sctx, cancel := t.storeContext(ctx)
	defer cancel()
	if err := t.tool.routing.rs.DeleteRoutes(sctx, t.prefix, routes); err != nil {
		t.storeFailed(ctx, "delete", recordRoutes, err)
	}
}

// deleteRoutes removes every route of the closing task, and its generation. A route left by a failure names a
// task whose state is gone: a Router skips it.
func (t *Task) deleteRoutes(ctx context.Context) error {
	if t.tool.routing == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.tool.opts.limits.TeardownTimeout)
	defer cancel()
	if err := t.tool.routing.rs.DeleteRoutes(ctx, t.prefix, nil); err != nil {
		t.storeFailed(ctx, "delete", recordRoutes, err)
		return fmt.Errorf("delete routes: %w", err)
	}
	return nil
}

// holds reports whether the task's allow list holds the text of every key.
func (t *Task) holds(keys []allowlist.Key) bool {
	for _, k := range keys {
		if !t.allow.Holds(k.Param, k.Text) {
			return false
		}
	}
	return true
}
