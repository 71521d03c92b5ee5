package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/commonagents-go/tool/allowlist"
	"github.com/commonagents-go/tool/celenv"
)

// DefaultWebhookPrefix is where a Router serves webhooks unless WithPrefix says otherwise (SPEC §9.6).
const DefaultWebhookPrefix = "/v1/webhooks/events"

// RouterOption configures NewRouter.
type RouterOption func(*Router)

// WithPrefix sets the path prefix of the webhook endpoint (default DefaultWebhookPrefix); payloads for a tool
// are POSTed to {prefix}/{namespace}/{tool}.
func WithPrefix(prefix string) RouterOption {
	return func(r *Router) {
		if p := strings.Trim(prefix, "/"); p != "" {
			r.prefix = "/" + p
		} else {
			r.prefix = "" // the root: /{namespace}/{tool}
		}
	}
}

// DefaultInFlightBytes is how many bytes of request bodies a Router holds at once unless WithInFlightBytes says
// otherwise.
const DefaultInFlightBytes = 16 << 20

// WithInFlightBytes caps the bytes of request bodies the Router holds at once, from the moment it starts reading
// a body until it has answered. A request that would go over the cap is answered 503 with Retry-After before
// its body is read; a request alone in flight is always served. A body's share is its Content-Length, or the
// tool's Limits.InboundBytes when the length is unknown. n <= 0 keeps DefaultInFlightBytes.
func WithInFlightBytes(n int64) RouterOption {
	return func(r *Router) {
		if n > 0 {
			r.inFlight.limit = n
		}
	}
}

// Router routes pushed payloads to the tasks they are for (SPEC §9.6). It holds tasks of any number of tools,
// serves the webhook endpoint, and fans each payload out to the tool's tasks. It indexes tasks by their
// allow-listed values of the parameters that filters compare with equality (`<payload expr> ==
// parameters.X`), so a payload visits only the tasks whose allow list holds the value it carries, however many
// other tasks there are. A Router is safe for concurrent use; a task removes itself when it closes.
type Router struct {
	prefix   string
	inFlight budget

	mu    sync.RWMutex
	tools map[string]*routes // by "namespace/name"; kept after the last task leaves, so the tool stays known
	tasks map[string]*routed // by task ID
}

// routes are the tasks of one tool name, grouped by the Tool value they were started from.
type routes struct {
	groups []*group
	// limit is the Limits.InboundBytes of the last Tool value the name had, so that a tool whose last task
	// left is still served with a bound.
	limit int64
}

// group is the tasks of one Tool and their index.
type group struct {
	routes   *routes
	tool     *Tool
	tasks    map[*Task]*routed
	served   bool     // Router.Serve named the Tool: the group stays without tasks
	presence presence // this replica's record in the Tool's Store
	// keyed reports, by event index, whether the event's filter has equality conjuncts: only then can the index
	// rule tasks out.
	keyed   []bool
	indexed map[string]bool                          // parameters some conjunct compares
	index   map[string]map[string]map[*Task]struct{} // parameter → canonical text → tasks
}

// routed is one task in a Router.
type routed struct {
	task  *Task
	group *group
	texts map[string]map[string]bool // what the task put in the index: parameter → texts
}

// NewRouter returns an empty Router.
func NewRouter(opts ...RouterOption) *Router {
	r := &Router{prefix: DefaultWebhookPrefix, tools: map[string]*routes{}, tasks: map[string]*routed{},
		inFlight: budget{limit: DefaultInFlightBytes}}
	for _, o := range opts {
		if o != nil {
			o(r)
		}
	}
	return r
}

// Add starts routing payloads to t. It fails with ErrClosed for a closed task and when another task with the
// same ID is already routed; adding the same task twice does nothing.
func (r *Router) Add(t *Task) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rt, ok := r.tasks[t.id]; ok {
		if rt.task == t {
			return nil
		}
		return fmt.Errorf("tool: router: another task with ID %q is already routed", t.id)
	}
	if err := t.watch(r); err != nil {
		return err
	}
	g := r.routesOf(t.tool).group(t.tool)
	rt := &routed{task: t, group: g, texts: map[string]map[string]bool{}}
	g.tasks[t] = rt
	r.tasks[t.id] = rt
	for name, texts := range t.allow.Snapshot() {
		for _, text := range texts {
			g.add(rt, name, text)
		}
	}
	return nil
}

// ServeOption configures Router.Serve.
type ServeOption func(*serveConfig)

// serveConfig is what ServeOptions set. The store-routed mode of issue 28 gives its hydrator here.
type serveConfig struct{}

// Serve makes the Router serve t's webhooks before it holds any task of t, and after its last task leaves: a
// payload for a served tool that no task wants is answered 202, not 404 (a sender such as GitHub does not retry a
// 404, so a replica that starts behind a load balancer must not answer it). Tasks of t are still routed only once
// given to Add. Serving the same Tool again does nothing. Serve fails only for a nil Tool.
func (r *Router) Serve(t *Tool, opts ...ServeOption) error {
	if t == nil {
		return errors.New("tool: router: Serve of a nil Tool")
	}
	var cfg serveConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.routesOf(t).group(t).served = true
	return nil
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

// Remove stops routing to the task with that ID; an unknown ID does nothing.
func (r *Router) Remove(taskID string) {
	r.mu.Lock()
	rt := r.tasks[taskID]
	if rt != nil {
		r.removeLocked(rt)
	}
	r.mu.Unlock()
	if rt != nil {
		rt.task.unwatch(r)
	}
}

func (r *Router) removeLocked(rt *routed) {
	delete(r.tasks, rt.task.id)
	g := rt.group
	delete(g.tasks, rt.task)
	for name, texts := range rt.texts {
		for text := range texts {
			g.remove(rt, name, text)
		}
	}
	if len(g.tasks) == 0 && !g.served { // a Tool value no task uses any more; the tool's name stays known
		g.routes.groups = slices.DeleteFunc(g.routes.groups, func(x *group) bool { return x == g })
	}
}

// group returns the group of tl, creating it.
func (rs *routes) group(tl *Tool) *group {
	for _, g := range rs.groups {
		if g.tool == tl {
			return g
		}
	}
	g := &group{routes: rs, tool: tl, tasks: map[*Task]*routed{}, keyed: make([]bool, len(tl.events)),
		indexed: map[string]bool{}, index: map[string]map[string]map[*Task]struct{}{}}
	for i, ev := range tl.events {
		if ev.filter == nil {
			continue
		}
		for _, c := range ev.filter.Program().EqualityConjuncts() {
			g.keyed[i] = true
			g.indexed[c.Param] = true
		}
	}
	rs.groups = append(rs.groups, g)
	return g
}

func (g *group) add(rt *routed, name, text string) {
	if !g.indexed[name] || rt.texts[name][text] {
		return
	}
	if rt.texts[name] == nil {
		rt.texts[name] = map[string]bool{}
	}
	rt.texts[name][text] = true
	byText := g.index[name]
	if byText == nil {
		byText = map[string]map[*Task]struct{}{}
		g.index[name] = byText
	}
	if byText[text] == nil {
		byText[text] = map[*Task]struct{}{}
	}
	byText[text][rt.task] = struct{}{}
}

func (g *group) remove(rt *routed, name, text string) {
	delete(rt.texts[name], text)
	set := g.index[name][text]
	delete(set, rt.task)
	if len(set) == 0 {
		delete(g.index[name], text)
	}
}

// grown re-indexes the names a task's call changed (watcher). It reads the list as it is now rather than
// applying the call's delta: notifications of concurrent calls may arrive out of order, and a delta applied late
// could drop a value a later call restored.
func (r *Router) grown(t *Task, added map[string]any, evicted map[string][]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rt := r.tasks[t.id]
	if rt == nil || rt.task != t {
		return
	}
	g := rt.group
	changed := map[string]bool{}
	for name := range added {
		changed[name] = g.indexed[name]
	}
	for name := range evicted {
		changed[name] = g.indexed[name]
	}
	now := t.allow.Snapshot()
	for name, indexed := range changed {
		if !indexed {
			continue
		}
		current := map[string]bool{}
		for _, text := range now[name] {
			current[text] = true
			g.add(rt, name, text)
		}
		for text := range rt.texts[name] {
			if !current[text] {
				g.remove(rt, name, text)
			}
		}
	}
}

// closed drops a closing task (watcher).
func (r *Router) closed(t *Task) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rt := r.tasks[t.id]; rt != nil && rt.task == t {
		r.removeLocked(rt)
	}
}

// errUnknownTool is Dispatch's error for a tool no task of which was ever added.
var errUnknownTool = errors.New("tool: router: no task of this tool was ever added")

// Dispatch delivers in to the tasks of namespace/tool it may concern, one after another, and returns a Delivery
// for each task it visited: the tasks the index could not rule out. When the payload is discarded for every
// task alike before any filter runs (a bad signature, a misconfigured event, a payload over the JSON bounds),
// no task is visited and the one Delivery returned has an empty TaskID.
//
// The error wraps ErrNotAccepted when some Sink refused an activation (the Deliveries are returned too) and
// when ctx ended before every task's outcome was decided (the tasks not yet visited are not visited),
// ErrPayloadTooLarge for a body over the tool's limit, and ErrUnknownEvent for an in.Event the tool does not
// have. ctx bounds the filter evaluations and the Sinks.
//
// On its first payload for a Tool, and every few minutes after, Dispatch records this replica (WithReplicaID) in
// the Tool's Store as serving it, and reports facts.RouterEagerReplicas to the Tool's Observer when other
// replicas did the same recently: a Router that holds its tasks in memory cannot see their allow-list growth.
func (r *Router) Dispatch(ctx context.Context, namespace, tool string, in *Inbound) ([]*Delivery, error) {
	r.mu.RLock()
	rs := r.tools[namespace+"/"+tool]
	var groups []*group
	if rs != nil {
		groups = append(groups, rs.groups...)
	}
	r.mu.RUnlock()
	if rs == nil {
		return nil, fmt.Errorf("%w: %s/%s", errUnknownTool, namespace, tool)
	}
	var out []*Delivery
	var errs []error
	for _, g := range groups {
		g.presence.announce(ctx, g.tool)
		p, err := g.tool.prepare(ctx, in)
		if err != nil { // this Tool value cannot take it (another version may): the others still get it
			errs = append(errs, err)
			continue
		}
		if d := toolWide(p); d != nil {
			out = append(out, d)
		}
		tasks := r.candidates(ctx, g, p)
		for i, t := range tasks {
			if ctx.Err() != nil { // no outcome for the tasks left: the sender must retry
				errs = append(errs, fmt.Errorf("%w: %d of %d tasks not handled: %w", ErrNotAccepted, len(tasks)-i,
					len(tasks), context.Cause(ctx)))
				break
			}
			d, err := t.deliver(ctx, p)
			switch {
			case errors.Is(err, ErrClosed):
				continue
			case err != nil:
				errs = append(errs, err)
			}
			if d != nil {
				out = append(out, d)
			}
		}
	}
	return out, errors.Join(errs...)
}

// toolWide is the Delivery of the discards decided for every task (signature, misconfiguration); nil when
// there are none.
func toolWide(p *inbound) *Delivery {
	var d *Delivery
	for i := range p.events {
		if pe := &p.events[i]; pe.tried && pe.reason != "" {
			if d == nil {
				d = &Delivery{}
			}
			d.Discarded = append(d.Discarded, Discard{Event: pe.ev.def.Name, Reason: pe.reason, Detail: pe.detail})
		}
	}
	return d
}

// candidates returns the tasks of g that p may activate: for each event still in play, the tasks whose allow
// list holds the value of the filter's most selective equality conjunct, or every task when the filter has no
// usable conjunct.
func (r *Router) candidates(ctx context.Context, g *group, p *inbound) []*Task {
	keys := make([][]allowlist.Key, len(p.events))
	for i := range p.events {
		if pe := &p.events[i]; pe.tried && pe.reason == "" && pe.match != nil && g.keyed[i] {
			keys[i] = pe.match.Keys(ctx) // CEL runs outside the lock
		}
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	var sets []map[*Task]struct{}
	for i := range p.events {
		pe := &p.events[i]
		if !pe.tried || pe.reason != "" {
			continue
		}
		set, ok := g.narrow(keys[i])
		if !ok {
			return g.all()
		}
		if len(set) > 0 {
			sets = append(sets, set)
		}
	}
	var out []*Task
	var seen map[*Task]bool // only needed when several events contribute
	if len(sets) > 1 {
		seen = map[*Task]bool{}
	}
	for _, set := range sets {
		for t := range set {
			if seen == nil || !seen[t] {
				out = append(out, t)
				if seen != nil {
					seen[t] = true
				}
			}
		}
	}
	return out
}

// narrow returns the tasks that can match an event through its most selective conjunct key, none when a key
// fails on a field the payload lacks; false when the index cannot narrow (no filter, no conjunct, or no conjunct
// evaluated).
func (g *group) narrow(keys []allowlist.Key) (map[*Task]struct{}, bool) {
	var best map[*Task]struct{}
	found := false
	for _, k := range keys {
		switch {
		case errors.Is(k.Err, celenv.ErrMissingField):
			// The conjunct is an `&&` term that errs whatever the assignment, and Match counts a missing
			// field as false: no task matches.
			return nil, true
		case k.Err != nil:
			continue
		case k.Null:
			return nil, true // no allow list holds null: no task matches
		}
		set := g.index[k.Param][k.Text]
		if !found || len(set) < len(best) {
			best, found = set, true
		}
	}
	return best, found
}

func (g *group) all() []*Task {
	out := make([]*Task, 0, len(g.tasks))
	for t := range g.tasks {
		out = append(out, t)
	}
	return out
}

// Register registers the webhook endpoint on m: the subtree {prefix}/, so any Mux works.
func (r *Router) Register(m Mux) { m.Handle(r.prefix+"/", r) }

// Mount is the former name of Register.
//
// Deprecated: use Register. Mount is also the name of a task's storage (TaskConfig.Mount).
func (r *Router) Mount(m Mux) { r.Register(m) }

// ServeHTTP serves POST {prefix}/{namespace}/{tool}. It answers 202 once every activation the payload caused
// was accepted by its task's Sink (also when no task wanted it), 503 when a Sink refused one or an earlier attempt
// with the same delivery id is still with a Sink (in_flight; the sender retries; activations already accepted are
// then discarded as duplicates if the sender gives a delivery id),
// 401 when the signature was bad for every event, 500 when the events are misconfigured (a missing secret
// setting) and nothing else happened, 413 for a body over the limit or a JSON payload over Limits.InboundDepth
// or Limits.InboundValues that no event took otherwise, 503 with Retry-After when the bodies in flight are at
// their cap (WithInFlightBytes), 404 for a path that names no tool the Router ever held, 405 for other methods
// and 400 for an event name the tool does not have.
func (r *Router) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	rest, ok := strings.CutPrefix(req.URL.Path, r.prefix+"/")
	namespace, name, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || namespace == "" || name == "" || strings.Contains(name, "/") {
		http.NotFound(w, req)
		return
	}
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "use POST", http.StatusMethodNotAllowed)
		return
	}
	limit, known := r.limit(namespace, name)
	if !known {
		http.NotFound(w, req)
		return
	}
	if req.ContentLength > limit {
		http.Error(w, "payload too large", http.StatusRequestEntityTooLarge)
		return
	}
	share := limit
	if req.ContentLength >= 0 {
		share = req.ContentLength
	}
	if !r.inFlight.acquire(share) {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many payloads in flight", http.StatusServiceUnavailable)
		return
	}
	defer r.inFlight.release(share)
	body, err := readBody(w, req, limit)
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			http.Error(w, "payload too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "could not read the body", http.StatusBadRequest)
		return
	}
	deliveries, err := r.Dispatch(req.Context(), namespace, name, &Inbound{Headers: req.Header, Body: body})
	status := statusOf(deliveries, err)
	if status == http.StatusServiceUnavailable { // a Sink refused, or another attempt holds the delivery id
		w.Header().Set("Retry-After", retryRefused)
	}
	if status != http.StatusAccepted {
		http.Error(w, http.StatusText(status), status)
		return
	}
	activations := 0
	for _, d := range deliveries {
		activations += len(d.Activations)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]int{"activations": activations})
}

// retryRefused is the Retry-After of a 503 for a refused or in-flight delivery, in seconds: long enough for the
// attempt that holds the delivery id to reach its Sink's accept in the common case.
const retryRefused = "5"

// readBody reads a request body of at most limit bytes. A body with a Content-Length is read into a buffer of
// exactly that size (io.ReadAll would grow its buffer and copy, about twice the body in allocations).
func readBody(w http.ResponseWriter, req *http.Request, limit int64) ([]byte, error) {
	src := http.MaxBytesReader(w, req.Body, limit)
	if req.ContentLength < 0 {
		return io.ReadAll(src)
	}
	body := make([]byte, req.ContentLength)
	if _, err := io.ReadFull(src, body); err != nil {
		return nil, err
	}
	return body, nil
}

// budget counts the bytes of bodies in flight against a limit.
type budget struct {
	mu          sync.Mutex
	limit, used int64
	peak        int64 // the most ever held, for tests
}

// acquire takes n bytes unless that would go over the limit while something else is in flight.
func (b *budget) acquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used > 0 && b.used+n > b.limit {
		return false
	}
	b.used += n
	b.peak = max(b.peak, b.used)
	return true
}

func (b *budget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// limit is the largest inbound size of the tool's groups, or that of its last Tool value when it has none; false
// when the Router never held or served the tool.
func (r *Router) limit(namespace, name string) (int64, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	rs := r.tools[namespace+"/"+name]
	if rs == nil {
		return 0, false
	}
	if len(rs.groups) == 0 {
		return rs.limit, true
	}
	var limit int64
	for _, g := range rs.groups {
		limit = max(limit, g.tool.opts.limits.InboundBytes)
	}
	return limit, true
}

// statusOf maps a dispatch to the HTTP status of ServeHTTP.
func statusOf(deliveries []*Delivery, err error) int {
	switch {
	case errors.Is(err, ErrNotAccepted):
		return http.StatusServiceUnavailable
	case errors.Is(err, ErrPayloadTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, errUnknownTool):
		return http.StatusNotFound
	case errors.Is(err, ErrUnknownEvent):
		return http.StatusBadRequest
	case err != nil:
		return http.StatusInternalServerError
	}
	bad, misconfigured, tooComplex, other := 0, 0, 0, 0
	for _, d := range deliveries {
		other += len(d.Activations)
		for _, x := range d.Discarded {
			switch x.Reason {
			case ReasonInFlight: // another attempt has not reached its Sink's accept: only a retry can tell
				return http.StatusServiceUnavailable
			case ReasonBadSignature:
				bad++
			case ReasonMisconfigured:
				misconfigured++
			case ReasonTooComplex:
				tooComplex++
			default:
				other++
			}
		}
	}
	switch {
	case other > 0:
		return http.StatusAccepted
	case misconfigured > 0: // e.g. the secret setting is missing: the sender should keep the payload and retry
		return http.StatusInternalServerError
	case tooComplex > 0: // nothing took the payload, and the events without a valid signature could not parse it
		return http.StatusRequestEntityTooLarge
	case bad > 0:
		return http.StatusUnauthorized
	}
	return http.StatusAccepted
}

// Mux is where a Router registers its webhook endpoint; *http.ServeMux satisfies it.
type Mux interface {
	Handle(pattern string, h http.Handler)
}
