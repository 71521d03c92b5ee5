package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/commonagents-go/tool/store"
)

// The routing index of store.RouteStore lives in tool_routes (schema version 2): a row per (route, task), and per
// task one row under the empty route holding its generation. Lookup is one statement for any number of routes.

// PutRoutes adds routes to task's in one statement.
func (s *Store) PutRoutes(ctx context.Context, task string, routes [][]byte) error {
	if err := checkRoutes(task, routes); err != nil {
		return err
	}
	if len(routes) == 0 {
		return nil
	}
	if _, err := s.exec(ctx, s.q.putRoutes, []byte(task), routes); err != nil {
		return fmt.Errorf("postgres store: put routes of %q: %w", task, err)
	}
	return nil
}

// DeleteRoutes removes routes from task's, or every route of the task and its generation when routes is nil.
func (s *Store) DeleteRoutes(ctx context.Context, task string, routes [][]byte) error {
	var err error
	switch {
	case routes == nil:
		_, err = s.exec(ctx, s.q.deleteTask, []byte(task))
	case len(routes) > 0:
		_, err = s.exec(ctx, s.q.deleteRoutes, []byte(task), routes)
	}
	if err != nil {
		return fmt.Errorf("postgres store: delete routes of %q: %w", task, err)
	}
	return nil
}

// BumpGeneration adds one to task's generation in one statement; the row lock orders concurrent bumps.
func (s *Store) BumpGeneration(ctx context.Context, task string) (uint64, error) {
	if err := checkKey(task); err != nil {
		return 0, err
	}
	var gen int64
	if err := s.queryRow(ctx, s.q.bump, []any{[]byte(task)}, &gen); err != nil {
		return 0, fmt.Errorf("postgres store: bump the generation of %q: %w", task, err)
	}
	return uint64(gen), nil
}

// Lookup returns the tasks of each route, at most limit after after, with their generations, in one round trip.
func (s *Store) Lookup(ctx context.Context, routes [][]byte, after string, limit int) ([]store.RouteHits, error) {
	if limit <= 0 {
		return nil, errors.New("postgres store: lookup: limit must be positive")
	}
	if slices.ContainsFunc(routes, func(r []byte) bool { return len(r) == 0 }) {
		return nil, errEmptyRoute
	}
	if len(routes) == 0 {
		return make([]store.RouteHits, 0), nil
	}
	c := &lookupCall{routes: routes, after: after, limit: limit}
	var err error
	if s.calls == nil {
		err = s.lookupOne(ctx, c)
	} else {
		err = s.calls.do(ctx, &storeCall{lookup: c})
	}
	if err != nil {
		return nil, fmt.Errorf("postgres store: lookup: %w", err)
	}
	return c.out, nil
}

// lookupCall is a call of Lookup and its answer.
type lookupCall struct {
	routes [][]byte
	after  string
	limit  int
	out    []store.RouteHits
	first  int // in a grouped statement, the ordinal of its first route less one
}

func (s *Store) lookupOne(ctx context.Context, c *lookupCall) error {
	c.out = make([]store.RouteHits, len(c.routes))
	rows, done, err := s.query(ctx, s.q.lookup, c.routes, []byte(c.after), c.limit)
	if err != nil {
		return err
	}
	defer done()
	defer rows.Close()
	for rows.Next() {
		var ord, gen int64
		var task []byte
		if err := rows.Scan(&ord, &task, &gen); err != nil {
			return err
		}
		c.hit(int(ord-1), task, gen)
	}
	return rows.Err()
}

// hit adds task, of generation gen, to the hits of route i: one past the limit says there are more.
func (c *lookupCall) hit(i int, task []byte, gen int64) {
	h := &c.out[i]
	if len(h.Hits) == c.limit {
		h.More = true
		return
	}
	h.Hits = append(h.Hits, store.RouteHit{Task: string(task), Generation: uint64(gen)})
}

// errEmptyRoute refuses an empty route: the empty route's row is the generation.
var errEmptyRoute = errors.New("postgres store: empty route")

// checkRoutes refuses an empty route and keys the primary key cannot hold.
func checkRoutes(task string, routes [][]byte) error {
	if err := checkKey(task); err != nil {
		return err
	}
	for _, r := range routes {
		if len(r) == 0 {
			return errEmptyRoute
		}
		if err := checkKey(string(r)); err != nil {
			return err
		}
	}
	return nil
}

var _ store.RouteStore = (*Store)(nil)
