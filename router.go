package tool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/commonagents-go/tool/store"
)

// A webhook's path reads in one direction through these files: router_http.go (the endpoint) → Router.Dispatch
// here → Tool.prepare (router_prepare.go: signatures, parse, the filters' variables, once per Tool value) →
// conjuncts.routes (router_route_keys.go: what the payload tells an index) → taskIndex.lookup (router_index_memory.go: the
// tasks it cannot rule out) → dispatch (router_dispatch.go: a taskSource brings each into memory, and its own pipeline
// runs: Task.deliver, event_deliver.go).

// RouterOptions configure NewRouter. The zero value serves the defaults.
type RouterOptions struct {
	// Prefix is the path prefix of the webhook endpoint: payloads for a tool are POSTed to
	// {Prefix}/{namespace}/{tool}. "" is the default, /v1/webhooks/events (SPEC §9.6); "/" serves at the root.
	Prefix string
	// InFlightBytes caps the bytes of request bodies the Router holds at once, from the moment it starts reading
	// a body until it has answered (default 16 MiB). A request that would go over the cap is answered 503 with
	// Retry-After before its body is read; a request alone in flight is always served. A body's share is its
	// Content-Length, or the tool's Limits.InboundBytes when the length is unknown.
	InFlightBytes int64
	// TaskCacheSize and TaskCacheIdle bound the tasks a Router in store mode (Serve with a Hydrator) keeps in
	// memory per served Tool: at most TaskCacheSize (default 100,000), and none idle for longer than
	// TaskCacheIdle (default 15 minutes). A task leaves as by Task.Detach: its state stays in the Store, and the
	// next webhook that needs it brings it back. Tasks that are active or pinned (docs/scaling.md) never leave,
	// so the bound can be exceeded while they are.
	TaskCacheSize int
	TaskCacheIdle time.Duration
	// MaxFanOut is how many tasks of one route a Router in store mode reads per Store lookup (default 1,000); a
	// route with more is read in pages.
	MaxFanOut int
	// DeadLetter takes a webhook's payload for a task that a Router in store mode cannot bring into memory
	// because of its stored state (it does not decode, or the Hydrator's configuration fails NewTask's checks):
	// taskID names it, in is the payload as received, err says why. Returning nil means the host has kept the
	// payload (to repair the task and deliver it later with Task.Deliver), and the task counts as handled; an
	// error, or no DeadLetter, makes the webhook's answer 503 so that the sender retries. ctx is the webhook's.
	DeadLetter func(ctx context.Context, taskID string, in *Inbound, err error) error
}

// The defaults of RouterOptions.
const (
	defaultWebhookPrefix = "/v1/webhooks/events"
	defaultInFlightBytes = 16 << 20
	defaultTaskCacheSize = 100_000
	defaultTaskCacheIdle = 15 * time.Minute
	defaultMaxFanOut     = 1000
)

// Router routes pushed payloads to the tasks they are for (SPEC §9.6). It holds tasks of any number of tools,
// serves the webhook endpoint, and fans each payload out to the tool's tasks. It indexes tasks by their
// allow-listed values of the parameters that filters compare with equality (`<payload expr> ==
// parameters.X`), so a payload visits only the tasks whose allow list holds the value it carries, however many
// other tasks there are. A Router is safe for concurrent use; a task removes itself when it closes.
//
// A Router keys its tasks as the Store does, by namespace, tool name and task ID: tasks of different tools may
// share an ID. A Router in store mode sends the tasks it evicts from its cache back to the Store in a goroutine of
// its own, which runs while there are such tasks; Close stops it and detaches the tasks the Router brought into
// memory.
type Router struct {
	prefix     string
	inFlight   budget
	cacheMax   int           // RouterOptions.TaskCacheSize
	cacheIdle  time.Duration // RouterOptions.TaskCacheIdle
	fanOut     int           // RouterOptions.MaxFanOut
	deadLetter func(ctx context.Context, taskID string, in *Inbound, err error) error

	evicted *detacher // store mode: detaches what the caches evict, off the webhooks' goroutines
	calls   flight    // Dispatch, Task, CloseTask and SweepExpired in progress: Close waits for them

	mu    sync.RWMutex
	ended bool                // by Close: the Router takes no more webhooks, calls or tasks
	tools map[string]*routes  // by "namespace/name"; kept after the last task leaves, so the tool stays known
	tasks map[taskKey]*routed // the tasks given to Add
}

// taskKey names a task as the Store does: a task ID is unique within its tool only.
type taskKey struct{ namespace, tool, id string }

// keyOf is t's key.
func keyOf(t *Task) taskKey { return taskKey{t.tool.Namespace(), t.tool.Name(), t.id} }

// routes are the Tool values of one tool name the Router serves: one group each.
type routes struct {
	groups []*group
	// limit is the Limits.InboundBytes of the last Tool value the name had, so that a tool whose last task
	// left is still served with a bound.
	limit int64
}

// group is one Tool value the Router serves: where its payloads' tasks are found (index) and brought into
// memory (source).
type group struct {
	routes   *routes
	tool     *Tool
	conj     conjuncts
	mem      *memIndex // eager mode: the index of the tasks given to Add; nil in store mode
	index    taskIndex
	source   taskSource
	cache    *taskCache // store mode (Router.Serve with a Hydrator); nil in eager mode
	served   bool       // Router.Serve named the Tool: the group stays without tasks
	presence presence   // this replica's record in the Tool's Store
}

// routed is one task given to Add.
type routed struct {
	task  *Task
	group *group
}

// NewRouter returns an empty Router; zero fields of opts keep their defaults.
func NewRouter(opts RouterOptions) *Router {
	r := &Router{prefix: defaultWebhookPrefix, tools: map[string]*routes{}, tasks: map[taskKey]*routed{},
		evicted: newDetacher(), inFlight: budget{limit: defaultInFlightBytes}, cacheMax: defaultTaskCacheSize,
		cacheIdle: defaultTaskCacheIdle, fanOut: defaultMaxFanOut, deadLetter: opts.DeadLetter}
	if opts.Prefix != "" {
		r.prefix = strings.TrimRight("/"+strings.Trim(opts.Prefix, "/"), "/") // "/" is the root: /{namespace}/{tool}
	}
	if opts.InFlightBytes > 0 {
		r.inFlight.limit = opts.InFlightBytes
	}
	if opts.TaskCacheSize > 0 {
		r.cacheMax = opts.TaskCacheSize
	}
	if opts.TaskCacheIdle > 0 {
		r.cacheIdle = opts.TaskCacheIdle
	}
	if opts.MaxFanOut > 0 {
		r.fanOut = opts.MaxFanOut
	}
	return r
}

// Add starts routing payloads to t. It fails with ErrClosed for a closed task or a closed Router, and when
// another task of the same tool (namespace and name) with the same ID is already routed; adding the same task
// twice does nothing. Tasks of different tools may share an ID.
//
// In store mode t is kept in memory (pinned) and is the task webhooks and Task reach for its ID; a copy of it
// that the cache held is detached in the Router's own goroutine, not by Add.
func (r *Router) Add(t *Task) error {
	old, err := r.add(t)
	if old != nil {
		r.evicted.add(reasonReplaced, old)
	}
	return err
}

// add is Add under the Router's lock; it returns the older copy of t that the cache held, for the caller to
// detach once the lock is released.
func (r *Router) add(t *Task) (old *Task, _ error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return nil, fmt.Errorf("tool: router: add task %s: %w", t.id, ErrClosed)
	}
	key := keyOf(t)
	if rt, ok := r.tasks[key]; ok {
		if rt.task == t {
			return nil, nil
		}
		return nil, fmt.Errorf("tool: router: another task %s of %s/%s is already routed", t.id, key.namespace, key.tool)
	}
	if err := t.watch(r); err != nil {
		return nil, err
	}
	g := r.routesOf(t.tool).group(t.tool)
	if g.cache != nil {
		var err error
		if old, err = g.cache.pin(t); err != nil {
			t.unwatch(r)
			return nil, err
		}
	} else {
		g.mem.add(t)
	}
	r.tasks[key] = &routed{task: t, group: g}
	return old, nil
}

// Serve makes the Router serve t's webhooks before it holds any task of t, and after its last task leaves: a
// payload for a served tool that no task wants is answered 202, not 404 (a sender such as GitHub does not retry a
// 404, so a replica that starts behind a load balancer must not answer it). With a nil hydrate, tasks of t are
// routed only once given to Add; serving the same Tool again does nothing.
//
// A hydrate function turns store mode on for t (docs/scaling.md): the Router finds a webhook's tasks in the
// Store's routing index, whatever tasks it holds, and brings those not in memory there with hydrate's
// configuration, one Scan each, into a bounded cache (RouterOptions.TaskCacheSize). A task another replica grew
// is re-read when the index says so. The Tool must be loaded WithRouteIndex over a Store that is a
// store.ScanStore (store/postgres: also a store.SwapStore, store.ClaimStore and store.ExpiringStore, which
// replicas need), and Tool.ReindexRoutes must have completed. Serve then reads the marker of Tool.ReindexRoutes
// (one Store read, bounded by ctx and by the Tool's CallTimeout) and fails with ErrNotReindexed without it; it
// also fails for a Tool loaded without WithRouteIndex, a Store that is not a store.ScanStore, and a Tool already
// served, or given to Add, in eager mode. It reads no task state: a restarted replica serves at once. Tasks given
// to Add are then kept in memory (pinned) and not indexed by the Router: they write their routes themselves.
// After Close, Serve fails with ErrClosed.
func (r *Router) Serve(ctx context.Context, t *Tool, hydrate Hydrator) error {
	if t == nil {
		return errors.New("tool: router: Serve of a nil Tool")
	}
	if hydrate != nil {
		if err := storeMode(ctx, t); err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return fmt.Errorf("tool: router: serve %s/%s: %w", t.Namespace(), t.Name(), ErrClosed)
	}
	rs := r.routesOf(t)
	exists := slices.ContainsFunc(rs.groups, func(g *group) bool { return g.tool == t })
	g := rs.group(t)
	g.served = true
	switch {
	case hydrate == nil || g.cache != nil:
	case exists:
		return errors.New("tool: router: Serve with a Hydrator of a Tool the Router already serves in eager mode")
	default:
		g.mem, g.index = nil, newStoreIndex(t, r.fanOut)
		g.cache = newTaskCache(t, hydrate, r.cacheMax, r.cacheIdle, r.evicted)
		g.source = g.cache
	}
	return nil
}

// storeMode checks that t can be served in store mode; ctx bounds the read of the marker.
func storeMode(ctx context.Context, t *Tool) error {
	if t.routing == nil {
		return errors.New("tool: router: store mode needs a Tool loaded WithRouteIndex")
	}
	if _, ok := t.opts.store.(store.ScanStore); !ok {
		return errors.New("tool: router: store mode needs a Store that implements store.ScanStore")
	}
	ctx, cancel := context.WithTimeout(ctx, t.opts.limits.CallTimeout)
	defer cancel()
	return t.reindexed(ctx)
}

// CloseTask closes the task id of namespace/tool that a Router in store mode serves, whether or not any replica
// holds it in memory: it is brought into memory here (the Hydrator's configuration, so that what its backends
// recorded is torn down) and closed as by Task.Close, which removes its state and its routes. Copies other
// replicas hold are no longer named by the index, so no webhook reaches them, and they leave their caches when
// idle. A task whose ExpiresAt has passed is closed as it is brought into memory (nil). A task the Store does
// not hold, or the Hydrator declines, is an error wrapping ErrNotFound; after Close, ErrClosed. ctx bounds the
// call.
func (r *Router) CloseTask(ctx context.Context, namespace, tool, id string) error {
	if err := r.enter(); err != nil {
		return err
	}
	defer r.calls.done()
	groups, _ := r.groups(namespace, tool)
	for _, g := range groups {
		if g.cache == nil {
			continue
		}
		t, release, err := g.cache.task(ctx, taskRef{id: id})
		if errors.Is(err, errExpired) {
			return nil // it had expired, and closed as it was brought into memory
		}
		if errors.Is(err, errSkip) {
			continue // not a task of this Tool value
		}
		if err != nil {
			return err
		}
		release()
		err = t.Close(ctx)
		g.cache.forget(t)
		return err
	}
	return fmt.Errorf("tool: router: close task %s of %s/%s: %w", id, namespace, tool, ErrNotFound)
}

// Task lends the host the task id of namespace/tool that the Router holds through Add, or that a Router in store
// mode serves. A task given to Add in eager mode is lent as it is: release does nothing, and the task stays until
// Remove or its end.
//
// In store mode a call for the task (Invoke, Interrupt, Touch, ...) can run on whichever replica it reaches: the
// task this replica holds, or else
// the stored task brought into memory with the Hydrator's configuration, one Scan, exactly as a webhook brings it.
// (A copy held here keeps the allow list it has; calls merge theirs into the stored one, and webhooks re-read it
// when the index says another replica grew it.) While lent it is pinned: the cache does not evict it. Call
// release once the calls are done (later calls of release do nothing); the task then leaves when the cache's
// bounds say so, as by Task.Detach. Do not Close or Detach a lent task to give it back: release it.
//
// A task the Store does not hold, or the Hydrator declines, is an error wrapping ErrNotFound; one whose ExpiresAt
// has passed is closed as it is brought into memory (ErrTaskExpired); one whose stored state does not decode is
// an error naming it (task.hydration_failed); after Close, ErrClosed; a Store that fails, an error that says so
// (it wraps ErrNotAccepted too, but does not read as a delivery's). ctx bounds bringing the task into memory, not the lend.
func (r *Router) Task(ctx context.Context, namespace, tool, id string) (t *Task, release func(), err error) {
	if err := r.enter(); err != nil {
		return nil, nil, err
	}
	defer r.calls.done()
	r.mu.RLock()
	rt := r.tasks[taskKey{namespace, tool, id}]
	r.mu.RUnlock()
	if rt != nil && rt.group.cache == nil {
		return rt.task, func() {}, nil
	}
	groups, _ := r.groups(namespace, tool)
	for _, g := range groups {
		if g.cache == nil {
			continue
		}
		t, free, err := g.cache.task(ctx, taskRef{id: id})
		switch {
		case errors.Is(err, errExpired):
			return nil, nil, fmt.Errorf("tool: router: task %s of %s/%s: %w", id, namespace, tool, ErrTaskExpired)
		case errors.Is(err, errSkip):
			continue // not a task of this Tool value
		case err != nil:
			return nil, nil, &lendError{what: fmt.Sprintf("tool: router: lend task %s of %s/%s", id, namespace, tool), err: err}
		}
		var once sync.Once
		return t, func() { once.Do(free) }, nil
	}
	return nil, nil, fmt.Errorf("tool: router: task %s of %s/%s: %w", id, namespace, tool, ErrNotFound)
}

// routesOf returns the routes of t's name, creating them.
func (r *Router) routesOf(t *Tool) *routes {
	key := t.Namespace() + "/" + t.Name()
	rs := r.tools[key]
	if rs == nil {
		rs = &routes{}
		r.tools[key] = rs
	}
	rs.limit = t.opts.limits.InboundBytes
	return rs
}

// group returns the group of tl, creating it.
func (rs *routes) group(tl *Tool) *group {
	for _, g := range rs.groups {
		if g.tool == tl {
			return g
		}
	}
	conj := conjunctsOf(tl)
	mem := newMemIndex(conj)
	g := &group{routes: rs, tool: tl, conj: conj, mem: mem, index: mem, source: heldTasks{}}
	rs.groups = append(rs.groups, g)
	return g
}

// Remove stops routing to the task id of namespace/tool that was given to Add; in store mode the task is then no
// longer pinned, and leaves memory when the cache's bounds say so. A task Add was not given does nothing; Remove
// neither closes nor detaches the task.
func (r *Router) Remove(namespace, tool, id string) {
	r.mu.Lock()
	rt := r.tasks[taskKey{namespace, tool, id}]
	if rt != nil {
		r.removeLocked(rt)
	}
	r.mu.Unlock()
	if rt != nil {
		rt.task.unwatch(r)
	}
}

func (r *Router) removeLocked(rt *routed) {
	delete(r.tasks, keyOf(rt.task))
	g := rt.group
	if g.cache != nil {
		g.cache.unpin(rt.task)
		return
	}
	if g.mem.remove(rt.task) == 0 && !g.served { // a Tool value no task uses any more; its name stays known
		g.routes.groups = slices.DeleteFunc(g.routes.groups, func(x *group) bool { return x == g })
	}
}

// grown re-indexes the names a task's call changed (watcher).
func (r *Router) grown(t *Task, added map[string]any, evicted map[string][]string) {
	r.mu.RLock() // held, so that a Remove cannot come between the lookup and the index's update
	defer r.mu.RUnlock()
	rt := r.tasks[keyOf(t)]
	if rt == nil || rt.task != t || rt.group.mem == nil {
		return
	}
	names := make(map[string]bool, len(added)+len(evicted))
	for name := range added {
		names[name] = true
	}
	for name := range evicted {
		names[name] = true
	}
	rt.group.mem.grown(t, names)
}

// closed drops a closing task (watcher).
func (r *Router) closed(t *Task) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rt := r.tasks[keyOf(t)]; rt != nil && rt.task == t {
		r.removeLocked(rt)
		if rt.group.cache != nil {
			rt.group.cache.forget(t)
		}
	}
}

// errUnknownTool is Dispatch's error for a tool the Router never held or served.
var errUnknownTool = errors.New("tool: router: no task of this tool was ever added")

// Dispatch delivers in to the tasks of namespace/tool it may concern, one after another, and returns a Delivery
// for each task it visited: the tasks the index could not rule out. When the payload is discarded for every
// task alike before any filter runs (a bad signature, a misconfigured event, a payload over the JSON bounds),
// no task is visited and the one Delivery returned has an empty TaskID. A payload that lacks a field an
// equality conjunct of an event's filter reads visits no task for that event: no task could activate it.
//
// The error wraps ErrNotAccepted when some Sink refused an activation (the Deliveries are returned too) and
// when ctx ended before every task's outcome was decided (the tasks not yet visited are not visited),
// ErrPayloadTooLarge for a body over the tool's limit, and ErrUnknownEvent for an in.Event the tool does not
// have. ctx bounds the filter evaluations and the Sinks.
//
// On its first payload for a Tool, and every few minutes after, Dispatch records this replica (WithReplicaID) in
// the Tool's Store as serving it, and reports facts.RouterEagerReplicas to the Tool's Observer when other
// replicas did the same recently: a Router that holds its tasks in memory cannot see their allow-list growth.
//
// After Close the error wraps ErrNotAccepted and ErrClosed (ServeHTTP answers 503): another replica takes the
// sender's retry.
func (r *Router) Dispatch(ctx context.Context, namespace, tool string, in *Inbound) ([]*Delivery, error) {
	if err := r.enter(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotAccepted, err)
	}
	defer r.calls.done()
	groups, known := r.groups(namespace, tool)
	if !known {
		return nil, fmt.Errorf("%w: %s/%s", errUnknownTool, namespace, tool)
	}
	var out []*Delivery
	var errs []error
	for _, g := range groups {
		if g.cache == nil { // eager replicas warn each other; store mode is what they should run
			g.presence.announce(ctx, g.tool)
		}
		p, err := g.tool.prepare(ctx, in)
		if err != nil { // this Tool value cannot take it (another version may): the others still get it
			errs = append(errs, err)
			continue
		}
		if d := toolWide(p); d != nil {
			out = append(out, d)
		}
		refs, err := g.index.lookup(ctx, g.conj.routes(ctx, p))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		delivered, failed := dispatch(ctx, p, refs, g.source, r.deadLetter)
		out, errs = append(out, delivered...), append(errs, failed...)
	}
	return out, errors.Join(errs...)
}

// groups returns the groups of namespace/name; false when the Router never held or served the tool.
func (r *Router) groups(namespace, name string) ([]*group, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	rs := r.tools[namespace+"/"+name]
	if rs == nil {
		return nil, false
	}
	return slices.Clone(rs.groups), true
}

// Hydrator gives the configuration of the stored task id that a Router in store mode brings into memory
// (Router.Serve): the same contract as RestoreTasks' configure (the ID field is ignored). False leaves the task
// stored and not routed here; the webhook's other tasks are not affected. Every replica must be able to give the
// configuration of any task ID (docs/scaling.md). ctx bounds the call; it may be called concurrently for
// different IDs.
type Hydrator func(ctx context.Context, id string) (TaskConfig, bool)

// lendError is a lend's failure: the task cache's errors begin with ErrNotAccepted's text, which is a delivery's
// (the webhooks they fail are answered 503); a lend says what failed without it, and still wraps err.
type lendError struct {
	what string // "tool: router: lend task <id> of <namespace>/<tool>"
	err  error
}

func (e *lendError) Error() string {
	return e.what + ": " + strings.TrimPrefix(e.err.Error(), ErrNotAccepted.Error()+": ")
}

func (e *lendError) Unwrap() error { return e.err }
