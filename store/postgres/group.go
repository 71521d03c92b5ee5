package postgres

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"
)

// WithGroupCommit sets how many statements the Store runs at once for its claims (Claim), writes (Put, PutTTL,
// PutBatch) and route lookups (Lookup) before it groups the calls that arrive meanwhile (default 1; 0 turns
// grouping off). A call that finds a lane free first lets the goroutines ready to run go (runtime.Gosched), so
// that the calls they make share its statement; with none, it runs alone, with the statement it would run without
// grouping, so that one call at a time costs what it did. A call that finds every lane busy waits, and when a
// lane's statement ends, the lane takes the waiting calls, of all three kinds, in one statement (at most 128 calls,
// and 1,024 keys written); a lane that ran waiting calls lets their callers run first, so that the calls they make
// next join. Under concurrency, the deliveries a replica works on cost one round trip, one transaction and one
// commit flush between them, instead of three each.
//
// Grouping changes no outcome: each call still succeeds or fails as a whole, and is answered only once the
// statement that carried it has ended; of racing claims exactly one wins; two calls that write one key never share
// a statement, and a grouped statement takes its rows in key order, so that two never wait on each other. A failed
// statement fails every call it carried. A call whose ctx ends while it waits for a lane is answered ctx's error at
// once and never runs; one whose statement is running waits for it to end (the statement is cancelled once every
// call it carries has given up) and is answered nil if it committed, else ctx's error. With WithAcquireTimeout, a
// call that finds no lane within the bound fails, as one that finds no connection does, with ErrPoolExhausted.
// A grouped statement runs on a context of its own: values of the caller's ctx, such as a trace, do not reach it.
func WithGroupCommit(lanes int) Option {
	return func(c *config) error {
		if lanes < 0 {
			return fmt.Errorf("WithGroupCommit: negative lanes %d", lanes)
		}
		c.lanes = lanes
		return nil
	}
}

// defaultLanes is WithGroupCommit's default.
const defaultLanes = 1

// groupMax bounds the calls one grouped statement carries, and groupMaxKeys the keys they write (a call with more
// runs alone).
const (
	groupMax     = 128
	groupMaxKeys = 1024
)

// A group runs calls alone when a lane is free, else several in one statement (WithGroupCommit). R is a pointer to
// a call's arguments, where its results are written too.
type group[R any] struct {
	lanes  int
	wait   time.Duration                               // how long a call waits for a lane before it fails with ErrPoolExhausted; 0: as its ctx allows
	one    func(ctx context.Context, r R) error        // a call alone, with the statement it has without grouping
	many   func(ctx context.Context, rs []R) error     // two or more calls in one statement, no key in two
	keys   func(r R, yield func(key string) bool) bool // the keys a call touches, none shared in a statement (nil: none); false when yield stopped
	detach func(r R)                                   // copies what r holds of its caller's, before r waits (nil: nothing)
	yield  func()                                      // lets the goroutines ready to run go first (nil: runtime.Gosched)
	mu     sync.Mutex
	busy   int             // lanes running a statement
	queue  []*groupCall[R] // calls waiting for a lane, in arrival order
}

type groupCall[R any] struct {
	req   R
	err   error
	done  chan struct{} // closed once err (and the results in req) are set
	batch *groupBatch   // the statement that took the call; nil while it waits
}

// groupBatch is one grouped statement: its context ends when no call waits for it any more.
type groupBatch struct {
	cancel  context.CancelFunc
	waiting int
}

// do runs r: alone on a free lane, else with the calls that wait with it.
func (g *group[R]) do(ctx context.Context, r R) error {
	var c *groupCall[R]
	g.mu.Lock()
	if g.busy < g.lanes {
		g.busy++
		g.mu.Unlock()
		g.letReadyCall()
		g.mu.Lock()
		if len(g.queue) == 0 {
			g.mu.Unlock()
			defer g.next()
			return g.one(ctx, r)
		}
		if err := ctx.Err(); err != nil { // never taken into a statement: it would run past its caller
			g.mu.Unlock()
			g.next()
			return err
		}
		// The calls that queued meanwhile share its statement, which the lane runs as it runs the next ones.
		c = &groupCall[R]{req: r, done: make(chan struct{})}
		g.queue = slices.Insert(g.queue, 0, c)
		calls, bctx := g.take()
		g.mu.Unlock()
		go g.run(bctx, calls)
	} else {
		c = &groupCall[R]{req: r, done: make(chan struct{})}
		g.queue = append(g.queue, c)
		g.mu.Unlock()
	}
	var timeout <-chan time.Time
	if g.wait > 0 {
		t := time.NewTimer(g.wait)
		defer t.Stop()
		timeout = t.C
	}
	for {
		select {
		case <-c.done:
			return c.err
		case <-ctx.Done():
			return g.leave(ctx, c)
		case <-timeout:
			timeout = nil
			if g.dequeue(c) { // no lane within the bound: as the pool answers (WithAcquireTimeout)
				return fmt.Errorf("%w: the grouped statement ahead ran past %v", ErrPoolExhausted, g.wait)
			}
			// taken meanwhile: the statement's own connection is bounded likewise
		}
	}
}

// dequeue removes c from the queue and reports whether it was still waiting there.
func (g *group[R]) dequeue(c *groupCall[R]) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if i := slices.Index(g.queue, c); i >= 0 {
		g.queue = slices.Delete(g.queue, i, i+1)
		return true
	}
	return false
}

// leave answers c, whose ctx has ended. Still in the queue, it leaves it and never runs. Taken into a statement, it
// waits for that statement to end, so that it is never answered before what it asked for is done or undone (nor
// its arguments read after it returned: they are the caller's buffers); the
// statement's own context ends once every call it carries has given up. It is answered nil when its statement
// committed, else ctx's error.
func (g *group[R]) leave(ctx context.Context, c *groupCall[R]) error {
	g.mu.Lock()
	if i := slices.Index(g.queue, c); i >= 0 {
		g.queue = slices.Delete(g.queue, i, i+1)
		g.mu.Unlock()
		return ctx.Err()
	}
	select {
	case <-c.done:
	default:
		if b := c.batch; b != nil {
			if b.waiting--; b.waiting == 0 {
				b.cancel()
			}
		}
	}
	g.mu.Unlock()
	<-c.done
	if c.err != nil {
		return ctx.Err()
	}
	return nil
}

// next hands a lane whose statement ended the calls waiting, or frees it.
func (g *group[R]) next() {
	g.mu.Lock()
	calls, ctx := g.take()
	if calls == nil {
		g.busy--
		g.mu.Unlock()
		return
	}
	g.mu.Unlock()
	go g.run(ctx, calls)
}

// run runs calls in one statement, then the calls that waited meanwhile, until none wait; then it frees its lane.
func (g *group[R]) run(ctx context.Context, calls []*groupCall[R]) {
	for calls != nil {
		var err error
		if len(calls) == 1 {
			err = g.one(ctx, calls[0].req)
		} else {
			reqs := make([]R, len(calls))
			for i, c := range calls {
				reqs[i] = c.req
			}
			err = g.many(ctx, reqs)
		}
		g.mu.Lock()
		calls[0].batch.cancel()
		for _, c := range calls {
			c.err = err
			close(c.done)
		}
		g.mu.Unlock()
		g.letReadyCall()
		g.mu.Lock()
		calls, ctx = g.take()
		if calls == nil {
			g.busy--
		}
		g.mu.Unlock()
	}
}

// letReadyCall lets the goroutines that are ready to run go before a lane takes its calls, so that the calls they
// make at once wait for it and share its statement: the callers a statement just answered (a delivery's claim
// follows its lookup, its record its claim), or the requests a replica has read meanwhile. Without it, the first of
// them to call would find the lane free and run alone, and the others would wait for a statement of their own.
func (g *group[R]) letReadyCall() {
	if g.yield != nil {
		g.yield()
		return
	}
	runtime.Gosched()
}

// take removes from the queue the calls of the next statement, at most groupMax, in arrival order, passing over a
// call that touches a key an earlier one of the statement touches (it waits for the one after). g.mu is held.
func (g *group[R]) take() ([]*groupCall[R], context.Context) {
	if len(g.queue) == 0 {
		return nil, nil
	}
	var calls []*groupCall[R]
	seen := map[string]bool{}
	kept := g.queue[:0]
	for _, c := range g.queue {
		if len(calls) == groupMax || len(calls) > 0 && len(seen) >= groupMaxKeys || !g.fresh(c.req, seen) {
			kept = append(kept, c)
			continue
		}
		calls = append(calls, c)
	}
	clear(g.queue[len(kept):])
	g.queue = kept
	ctx, cancel := context.WithCancel(context.Background())
	b := &groupBatch{cancel: cancel, waiting: len(calls)}
	for _, c := range calls {
		c.batch = b
	}
	return calls, ctx
}

// fresh reports whether none of r's keys is in seen, and adds them when so.
func (g *group[R]) fresh(r R, seen map[string]bool) bool {
	if g.keys == nil {
		return true
	}
	ok := g.keys(r, func(k string) bool { return !seen[k] })
	if ok {
		g.keys(r, func(k string) bool { seen[k] = true; return true })
	}
	return ok
}
