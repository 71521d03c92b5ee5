package tool

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/store"
)

// The task source of store mode: a bounded cache of the tasks a Router brings into memory from the Store as
// webhooks need them (hydration), and sends back to the Store (eviction, as Task.Detach, by the Router's detacher:
// router_detach.go) when they are idle.

// errSkip is a task source's answer for a task the index named that is not to be visited: the host's Hydrator
// declined it, or the Store no longer holds it (it was closed).
var errSkip = errors.New("tool: router: task not routed here")

// Kinds of errSkip: the task had expired, and was closed as it was brought into memory (task_lifetime.go); the Store
// no longer holds it.
var (
	errExpired = fmt.Errorf("%w: it expired", errSkip)
	errGone    = fmt.Errorf("%w: it is no longer stored", errSkip)
)

// taskCache holds the tasks of one Tool value that a Router in store mode brought into memory: at most max of
// them, each while it is active (router_activity.go), pinned (Router.Add, background events), lent to a dispatch, or
// idle less than idle. It is safe for concurrent use. It starts no goroutine: it sweeps when a lend ends, at most
// every idle/4, and hands what it evicts to the Router's detacher.
type taskCache struct {
	tool    *Tool
	hydrate Hydrator
	max     int
	idle    time.Duration
	evicted *detacher

	mu         sync.Mutex
	closed     bool // by drain (Router.Close): a task loaded after it is detached by its loader
	entries    map[string]*cacheEntry
	lru        *list.List // of *cacheEntry, the most recently lent at the front
	lastSweep  time.Time
	quarantine map[string]*quarantined // tasks whose stored state failed to hydrate, by ID
}

// Bounds of the back-off of a task whose stored state failed to hydrate: its webhooks are answered 503 at once,
// without reading it again, until the back-off has passed; each failure doubles it.
const (
	quarantineMin = 10 * time.Second
	quarantineMax = 10 * time.Minute
)

// quarantined is a task whose stored state failed to hydrate.
type quarantined struct {
	until   time.Time
	backoff time.Duration
	err     *hydrationError
}

// hydrationError is a task source's error for a task whose stored state, or configuration, failed to hydrate:
// the webhook is answered 503 (it wraps ErrNotAccepted) unless the Router's DeadLetter takes the payload.
type hydrationError struct {
	id  string
	err error
}

func (e *hydrationError) Error() string {
	return fmt.Sprintf("tool: router: task %s cannot be loaded: %v", e.id, e.err)
}

func (e *hydrationError) Unwrap() []error { return []error{ErrNotAccepted, e.err} }

// cacheEntry is one task ID's place in the cache; its task is loaded once (singleflight) by the first dispatch
// that needs it, while the others wait on ready.
type cacheEntry struct {
	id    string
	ready chan struct{} // closed once task or err is set
	task  *Task
	err   error
	elem  *list.Element

	// Under the cache's mu.
	lent   int  // dispatches holding the task
	pinned bool // given to Router.Add

	refresh sync.Mutex // one re-read of the allow list at a time
	gen     uint64     // under refresh: the generation of the allow list the task holds, at least
}

func newTaskCache(t *Tool, h Hydrator, max int, idle time.Duration, evicted *detacher) *taskCache {
	return &taskCache{tool: t, hydrate: h, max: max, idle: idle, evicted: evicted, entries: map[string]*cacheEntry{},
		lru: list.New(), quarantine: map[string]*quarantined{}}
}

// task lends the task ref names until release is called, hydrating it when it is not in memory, and re-reading
// the allow list of a copy that may be stale (refresh: another replica grew it).
func (c *taskCache) task(ctx context.Context, ref taskRef) (*Task, func(), error) {
	for range 2 { // a task that closed meanwhile is loaded again, once
		e, load, q := c.lend(ref.id)
		if q != nil {
			return nil, nil, q
		}
		if load {
			c.load(ctx, e, ref.gen)
		}
		release := func() { c.release(e) }
		select {
		case <-e.ready:
		case <-ctx.Done():
			release()
			return nil, nil, fmt.Errorf("%w: task %s not loaded: %w", ErrNotAccepted, ref.id, context.Cause(ctx))
		}
		if e.err != nil {
			release()
			return nil, nil, e.err
		}
		if e.task.isClosed() {
			c.drop(e)
			release()
			continue
		}
		if load { // just read, after the lookup: as new as the index says
			return e.task, release, nil
		}
		if err := c.refresh(ctx, e, ref); err != nil {
			release()
			return nil, nil, err
		}
		return e.task, release, nil
	}
	return nil, nil, errSkip
}

// lend takes the entry of id, creating it; load reports that the caller must load it. A task in quarantine is
// not lent: its error is returned.
func (c *taskCache) lend(id string) (e *cacheEntry, load bool, _ *hydrationError) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if q := c.quarantine[id]; q != nil && c.tool.opts.clock.Now().Before(q.until) {
		return nil, false, q.err
	}
	e = c.entries[id]
	if e == nil {
		e = &cacheEntry{id: id, ready: make(chan struct{})}
		e.elem = c.lru.PushFront(e)
		c.entries[id] = e
		load = true
	} else {
		c.lru.MoveToFront(e.elem)
	}
	e.lent++
	return e, load, nil
}

// load hydrates e's task: the host's configuration, one Scan of the task's state, and the start RestoreTasks
// uses (startTask with the snapshot), made with a context that never ends. gen is the generation the index
// held before the Scan, so the task holds an allow list at least that new.
func (c *taskCache) load(ctx context.Context, e *cacheEntry, gen uint64) {
	e.err = c.evicted.settle(ctx, taskKey{c.tool.Namespace(), c.tool.Name(), e.id})
	if e.err == nil {
		e.task, e.err = c.hydrateTask(ctx, e.id)
	}
	e.gen = gen
	c.mu.Lock()
	var late *Task // loaded after Router.Close drained the cache
	var herr *hydrationError
	switch {
	case e.err == nil && c.closed:
		late, e.task, e.err = e.task, nil, fmt.Errorf("%w: tool: router: %w", ErrNotAccepted, ErrClosed)
		c.remove(e)
	case errors.As(e.err, &herr):
		q := c.quarantine[e.id]
		if q == nil {
			q = &quarantined{backoff: quarantineMin}
			c.quarantine[e.id] = q
		} else {
			q.backoff = min(2*q.backoff, quarantineMax)
		}
		q.until, q.err = c.tool.opts.clock.Now().Add(q.backoff), herr
		c.remove(e)
	case e.err != nil:
		c.remove(e)
	default:
		delete(c.quarantine, e.id)
	}
	c.mu.Unlock()
	close(e.ready)
	if late != nil {
		_ = c.evicted.detach(ctx, late, reasonClosed) // this webhook's own task: Close has stopped the detacher
	}
}

func (c *taskCache) hydrateTask(ctx context.Context, id string) (*Task, error) {
	cfg, ok := c.hydrate(ctx, id)
	if !ok {
		return nil, errSkip
	}
	cfg.ID = id
	prefix := toolPrefix(c.tool)
	entries, err := scanTask(ctx, c.tool.opts.store.(store.ScanStore), prefix+id+"/")
	if err != nil {
		c.tool.observeTool(ctx, facts.StoreFailed, id, map[string]any{"operation": "scan", "record": recordTask,
			"error": err.Error()})
		return nil, c.tool.secrets.Error(fmt.Errorf("%w: tool: router: load task %s: %w", ErrNotAccepted, id, err),
			ErrNotAccepted, context.Canceled, context.DeadlineExceeded)
	}
	snaps := groupSnapshots(prefix, entries)
	if len(snaps) != 1 || snaps[0].id != id {
		return nil, errGone // closed since the index named it
	}
	task, err := c.tool.startTask(context.WithoutCancel(ctx), cfg, true, snaps[0])
	switch {
	case errors.Is(err, ErrTaskExpired): // closed by startTask: state, routes and expiry record gone
		return nil, errExpired
	case err != nil:
		c.tool.observeTool(ctx, facts.TaskHydrationFailed, id, map[string]any{"error": err.Error()})
		return nil, &hydrationError{id: id, err: c.tool.secrets.Error(err, startErrorSentinels...)}
	}
	return task, nil
}

// scanTask reads the state of the task under prefix in one pass, without its delivery ids' records when the Store
// can leave them out: one per delivery within the dedupe window, which only their claims read.
func scanTask(ctx context.Context, st store.ScanStore, prefix string) ([]store.Entry, error) {
	if ps, ok := st.(store.PartialScanStore); ok {
		return ps.ScanExcept(ctx, prefix, []string{prefix + deliveriesDir})
	}
	return st.Scan(ctx, prefix)
}

// refresh re-reads e's allow list when it may be stale: the index holds a newer generation than the task, or
// found the task for a payload whose equality keys its list does not all hold. The generation alone would miss
// a growth whose writer died between storing the list and bumping the generation (its retry finds the value
// stored, changes nothing and bumps nothing); the keys alone would miss nothing, but cost a read for every task
// the index names that the payload does not match. When the list holds every key and the generation is not
// newer, this costs nothing.
func (c *taskCache) refresh(ctx context.Context, e *cacheEntry, ref taskRef) error {
	e.refresh.Lock()
	defer e.refresh.Unlock()
	gen := ref.gen
	if gen <= e.gen && e.task.holds(ref.keys) {
		return nil
	}
	if err := e.task.reread(ctx); err != nil {
		if errors.Is(err, ErrNotFound) {
			return errSkip
		}
		e.task.storeFailed(ctx, "read", recordAllowList, err)
		return fmt.Errorf("%w: tool: router: task %s: %w", ErrNotAccepted, e.id, err)
	}
	e.gen = max(e.gen, gen)
	return nil
}

// release ends a lend, and evicts what the bounds say: the Router's detacher sends those tasks back to the
// Store, so that the webhook that released waits on no other task's I/O.
func (c *taskCache) release(e *cacheEntry) {
	c.mu.Lock()
	e.lent--
	evicted := c.evictable()
	c.mu.Unlock()
	c.evicted.add(reasonEvicted, evicted...)
}

// evictable removes from the cache the tasks over the size bound, least recently lent first, and, at most every
// idle/4, those idle longer than the idle age, and returns them. c.mu is held.
func (c *taskCache) evictable() []*Task {
	now := c.tool.opts.clock.Now()
	sweep := now.Sub(c.lastSweep) >= c.idle/4
	if len(c.entries) <= c.max && !sweep {
		return nil
	}
	if sweep {
		c.lastSweep = now
	}
	var out []*Task
	for el := c.lru.Back(); el != nil; {
		e := el.Value.(*cacheEntry)
		el = el.Prev()
		over := len(c.entries) > c.max
		if !over && !sweep {
			break
		}
		if !c.evicts(e, now, over) {
			continue
		}
		c.remove(e)
		out = append(out, e.task)
	}
	return out
}

// evicts reports whether e may go now: over the size bound, or idle past the idle age.
func (c *taskCache) evicts(e *cacheEntry, now time.Time, over bool) bool {
	select {
	case <-e.ready:
	default:
		return false // being loaded
	}
	if e.task == nil || e.lent > 0 || e.pinned || e.task.active() || e.task.pinned() {
		return false
	}
	return over || e.task.idleAge(now) >= c.idle
}

// remove drops e from the cache when it is still there. c.mu is held.
func (c *taskCache) remove(e *cacheEntry) {
	if c.entries[e.id] == e {
		delete(c.entries, e.id)
		c.lru.Remove(e.elem)
	}
}

// drop forgets e.
func (c *taskCache) drop(e *cacheEntry) {
	c.mu.Lock()
	c.remove(e)
	c.mu.Unlock()
}

// forget forgets t, which closed or left the Router.
func (c *taskCache) forget(t *Task) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[t.id]; e != nil && e.task == t {
		c.remove(e)
	}
}

// pin puts t, given to Router.Add, in the cache for good: it is the task dispatches get for its ID. It returns
// the copy of t the cache held, if any, for the caller to detach (no I/O under the Router's lock). It fails when
// another task of that ID is in the cache and lent.
func (c *taskCache) pin(t *Task) (old *Task, _ error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("tool: router: %w", ErrClosed)
	}
	e := c.entries[t.id]
	if e != nil {
		select {
		case <-e.ready:
		default:
			return nil, fmt.Errorf("tool: router: task %q is being loaded; add it again", t.id)
		}
		if e.task == t {
			e.pinned = true
			return nil, nil
		}
		if e.lent > 0 || e.pinned {
			return nil, fmt.Errorf("tool: router: another task with ID %q is in use", t.id)
		}
		old = e.task
		c.remove(e)
	}
	e = &cacheEntry{id: t.id, ready: make(chan struct{}), task: t, pinned: true}
	close(e.ready)
	e.elem = c.lru.PushFront(e)
	c.entries[t.id] = e
	return old, nil
}

// drain empties the cache for Router.Close and returns the tasks it brought into memory, lent ones included. The
// tasks given to Router.Add are the host's and are left alone; a task still being loaded is detached by its
// loader (load).
func (c *taskCache) drain() []*Task {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var out []*Task
	for _, e := range c.entries {
		select {
		case <-e.ready:
		default:
			continue
		}
		if e.task != nil && !e.pinned {
			out = append(out, e.task)
		}
	}
	c.entries = map[string]*cacheEntry{}
	c.lru.Init()
	return out
}

// unpin makes t evictable again (Router.Remove).
func (c *taskCache) unpin(t *Task) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[t.id]; e != nil && e.task == t {
		e.pinned = false
	}
}

// len returns how many tasks the cache holds.
func (c *taskCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

var _ taskSource = (*taskCache)(nil)
