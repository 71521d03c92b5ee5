package tool

import (
	"context"
	"fmt"
	"strings"

	"github.com/commonagents-go/tool/allowlist"
	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/store"
)

// The third step of a webhook's path in store mode: the tasks of one Tool value that a payload's eventRoutes
// cannot rule out, from the routing index the replicas share in the Store (router_route_writes.go writes it).

// storeIndex looks a payload's routes up in the Store: every key of every event in one store.RouteStore.Lookup, then,
// per event, the most selective key, exactly as memIndex narrows; only a key whose tasks exceed the fan-out bound
// costs more round trips (one per page). It names tasks by ID, with the generation the index holds and the key
// it found them by, for the task cache to bring into memory and to tell a stale cached allow list (router_task_cache.go).
type storeIndex struct {
	tool   *Tool
	rs     store.RouteStore
	fanOut int
	prefix string // of the tool's tasks' keys: "tasks/<namespace>/<tool>/"
}

func newStoreIndex(t *Tool, fanOut int) *storeIndex {
	return &storeIndex{tool: t, rs: t.routing.rs, fanOut: fanOut, prefix: toolPrefix(t)}
}

// toolPrefix is the prefix of the keys of t's tasks.
func toolPrefix(t *Tool) string { return "tasks/" + t.Namespace() + "/" + t.Name() + "/" }

// lookup returns the tasks of the routes' most selective keys, each once, in the index's order. A failed
// lookup is reported (store.failed) and wraps ErrNotAccepted: the sender must retry, since nothing was decided.
func (x *storeIndex) lookup(ctx context.Context, routes []eventRoute) ([]taskRef, error) {
	if len(routes) == 0 {
		return nil, nil
	}
	ns, name := x.tool.Namespace(), x.tool.Name()
	var keys [][]byte
	var owner []int           // by key: its route
	var found []allowlist.Key // by key: what it looks up; zero for a broadcast route
	for ri, r := range routes {
		ev := x.tool.events[r.event].def.Name
		if r.all {
			keys, owner, found = append(keys, broadcastKey(ns, name, ev)), append(owner, ri), append(found, allowlist.Key{})
			continue
		}
		for _, k := range r.keys {
			keys, owner = append(keys, routeKey(ns, name, ev, k.Param, k.Text)), append(owner, ri)
			found = append(found, k)
		}
	}
	hits, err := x.rs.Lookup(ctx, keys, "", x.fanOut)
	if err != nil {
		return nil, x.failed(ctx, err)
	}
	best := make([]int, len(routes))
	for i := range best {
		best[i] = -1
	}
	for i, h := range hits {
		if b := best[owner[i]]; b < 0 || narrower(h, hits[b]) {
			best[owner[i]] = i
		}
	}
	var refs []taskRef
	seen := map[string]int{} // task → its index in refs
	add := func(h store.RouteHits, by []allowlist.Key) {
		for _, hit := range h.Hits {
			id, ok := strings.CutPrefix(hit.Task, x.prefix)
			if !ok {
				continue
			}
			id = strings.TrimSuffix(id, "/")
			if i, ok := seen[id]; ok {
				refs[i].gen = max(refs[i].gen, hit.Generation)
				refs[i].keys = append(refs[i].keys, by...)
				continue
			}
			seen[id] = len(refs)
			refs = append(refs, taskRef{id: id, gen: hit.Generation, keys: by})
		}
	}
	for ri, b := range best {
		h := hits[b]
		by := routes[ri].keys
		add(h, by)
		for h.More && len(h.Hits) > 0 {
			page, err := x.rs.Lookup(ctx, keys[b:b+1], h.Hits[len(h.Hits)-1].Task, x.fanOut)
			if err != nil {
				return nil, x.failed(ctx, err)
			}
			h = page[0]
			add(h, by)
		}
	}
	return refs, nil
}

// narrower reports whether a names fewer tasks than b: a complete set before a paged one.
func narrower(a, b store.RouteHits) bool {
	if a.More != b.More {
		return !a.More
	}
	return len(a.Hits) < len(b.Hits)
}

// failed reports a failed lookup and returns the error for the sender's retry.
func (x *storeIndex) failed(ctx context.Context, err error) error {
	x.tool.observeTool(ctx, facts.StoreFailed, "", map[string]any{"operation": "lookup", "record": recordRoutes,
		"error": err.Error()})
	return fmt.Errorf("%w: tool: router: look up routes: %w", ErrNotAccepted, err)
}

// observeTool reports a fact of the Tool that no task of this process reports (the Router's).
func (t *Tool) observeTool(ctx context.Context, name, taskID string, data map[string]any) {
	if t.opts.observer == nil {
		return
	}
	t.opts.observer.Observe(ctx, Fact{Name: name, Tool: t.Name(), TaskID: taskID, Time: t.opts.clock.Now(),
		Data: maskFactData(t.secrets, data)})
}

var _ taskIndex = (*storeIndex)(nil)
