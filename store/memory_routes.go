package store

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"
)

// routeTable is the memory store's RouteStore: route → tasks, the reverse, and the generations. It has its own
// lock: routes are read on every webhook of the store-routed mode and do not contend with task state.
type routeTable struct {
	mu     sync.RWMutex
	tasks  map[string]map[string]struct{} // route → tasks
	routes map[string]map[string]struct{} // task → routes
	gens   map[string]uint64
}

// errEmptyRoute is RouteStore's error for an empty route.
var errEmptyRoute = errors.New("store: empty route")

func (s *memoryStore) PutRoutes(_ context.Context, task string, routes [][]byte) error {
	if slices.ContainsFunc(routes, func(r []byte) bool { return len(r) == 0 }) {
		return errEmptyRoute
	}
	t := &s.routes
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tasks == nil {
		t.tasks, t.routes, t.gens = map[string]map[string]struct{}{}, map[string]map[string]struct{}{}, map[string]uint64{}
	}
	for _, r := range routes {
		route := string(r)
		if t.tasks[route] == nil {
			t.tasks[route] = map[string]struct{}{}
		}
		t.tasks[route][task] = struct{}{}
		if t.routes[task] == nil {
			t.routes[task] = map[string]struct{}{}
		}
		t.routes[task][route] = struct{}{}
	}
	return nil
}

func (s *memoryStore) DeleteRoutes(_ context.Context, task string, routes [][]byte) error {
	t := &s.routes
	t.mu.Lock()
	defer t.mu.Unlock()
	drop := func(route string) {
		delete(t.tasks[route], task)
		if len(t.tasks[route]) == 0 {
			delete(t.tasks, route)
		}
		delete(t.routes[task], route)
	}
	if routes == nil {
		for route := range t.routes[task] {
			drop(route)
		}
		delete(t.routes, task)
		delete(t.gens, task)
		return nil
	}
	for _, r := range routes {
		drop(string(r))
	}
	if len(t.routes[task]) == 0 {
		delete(t.routes, task)
	}
	return nil
}

func (s *memoryStore) BumpGeneration(_ context.Context, task string) (uint64, error) {
	t := &s.routes
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gens == nil {
		t.tasks, t.routes, t.gens = map[string]map[string]struct{}{}, map[string]map[string]struct{}{}, map[string]uint64{}
	}
	t.gens[task]++
	return t.gens[task], nil
}

func (s *memoryStore) Lookup(_ context.Context, routes [][]byte, after string, limit int) ([]RouteHits, error) {
	if limit <= 0 {
		return nil, errors.New("store: lookup: limit must be positive")
	}
	t := &s.routes
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]RouteHits, len(routes))
	for i, r := range routes {
		var tasks []string
		for task := range t.tasks[string(r)] {
			if task > after {
				tasks = append(tasks, task)
			}
		}
		slices.SortFunc(tasks, strings.Compare)
		if len(tasks) > limit {
			tasks, out[i].More = tasks[:limit], true
		}
		for _, task := range tasks {
			out[i].Hits = append(out[i].Hits, RouteHit{Task: task, Generation: t.gens[task]})
		}
	}
	return out, nil
}

var _ RouteStore = (*memoryStore)(nil)

// expiryTable is the memory store's TaskExpiryStore: task → when it expires.
type expiryTable struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (s *memoryStore) SetTaskExpiry(_ context.Context, task string, at time.Time) error {
	t := &s.expiry
	t.mu.Lock()
	defer t.mu.Unlock()
	if at.IsZero() {
		delete(t.at, task)
		return nil
	}
	if t.at == nil {
		t.at = map[string]time.Time{}
	}
	t.at[task] = at
	return nil
}

func (s *memoryStore) ExpiredTasks(_ context.Context, prefix string, now time.Time, after TaskExpiry,
	limit int) ([]TaskExpiry, error) {
	if limit <= 0 {
		return nil, errors.New("store: expired tasks: limit must be positive")
	}
	t := &s.expiry
	t.mu.Lock()
	var out []TaskExpiry
	for task, at := range t.at {
		if strings.HasPrefix(task, prefix) && !at.After(now) && expiryAfter(TaskExpiry{task, at}, after) {
			out = append(out, TaskExpiry{Task: task, At: at})
		}
	}
	t.mu.Unlock()
	slices.SortFunc(out, func(a, b TaskExpiry) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return strings.Compare(a.Task, b.Task)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// expiryAfter reports whether e comes after mark in the order of (At, Task).
func expiryAfter(e, mark TaskExpiry) bool {
	if c := e.At.Compare(mark.At); c != 0 {
		return c > 0
	}
	return e.Task > mark.Task
}

var _ TaskExpiryStore = (*memoryStore)(nil)
