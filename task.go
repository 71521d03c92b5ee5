package tool

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/commonagents-go/tool/allowlist"
	"github.com/commonagents-go/tool/celenv"
	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/internal/redact"
	"github.com/commonagents-go/tool/mcpauth"
	"github.com/commonagents-go/tool/runtime"
)

// TaskConfig describes one task of a tool: who runs it and with which agent-side facts.
type TaskConfig struct {
	// ID names the task; "" generates one. An ID is at most 256 bytes of printable UTF-8 without '/': it is part
	// of the task's Store keys, whose segments '/' separates.
	ID         string
	Capability Capability
	Agent      AgentInfo
	// Context is the task context: CEL's `context` and the template root {context.*}.
	Context map[string]any
	// Mount is the storage behind {mount.*} and mount.read/mount.write; nil means none.
	Mount *Mount
	// Sink receives the task's activations; nil means they are only returned by Deliver.
	Sink Sink
	// Approver decides the calls of the actions Capability.Approve names; NewTask fails without one when the
	// capability names any.
	Approver Approver
	// Elicitor answers the requests for user input that MCP servers make during a call (elicitation/create),
	// as Approver decides calls; nil refuses them, and the server's call goes on or fails as it decides.
	Elicitor Elicitor
	// Sampler answers the LLM completions MCP servers request during a call (sampling/createMessage); nil refuses
	// them.
	Sampler Sampler
	// Roots lists the host's roots when an MCP server asks (roots/list); nil offers servers no roots.
	Roots runtime.RootsFunc
	// MCPRelay passes the requests MCP servers make during a call (sampling/createMessage, elicitation/create,
	// roots/list) to the host's own MCP client as they came, offering servers only what that client declared:
	// a gateway's hook (mcpserve.SessionRelay gives one per MCP session). When set, Elicitor, Sampler and Roots
	// are not used.
	MCPRelay runtime.Relay
	// Subject is the end user the task acts for: an opaque key the host chooses (a digest of its own user id
	// serves), the same for every conversation of that user, since grants are kept under it and the next
	// conversation reuses them. It is fixed for the task's life, because a task's connections to remote servers
	// carry one user's tokens; a host that restores the task gives the same. AuthRequest.Subject and
	// mcpauth.Server.Subject carry it. "" = no end user.
	Subject string
	// MCPAuthorizer gives the bearer tokens of the mcp backend's requests to remote servers (sse,
	// streamable_http) and answers their 401 and 403 insufficient_scope challenges (package mcpauth); every token
	// it returns joins the task's secrets. A server block whose headers set Authorization keeps its own. nil
	// sends no token but the headers'.
	MCPAuthorizer mcpauth.Authorizer
	// ExpiresAt, when set, is when the task ends by itself, as by Close: its backends are torn down and its state
	// leaves the Store (fact task.expired). It is stored with the task, so a task restored in another process keeps
	// it; at RestoreTask a zero ExpiresAt keeps the stored one and a set one replaces it. The Tool's Clock tells
	// when it has come. Zero means the task lives until Close.
	ExpiresAt time.Time
}

// AgentInfo is what {agent.*} resolves to.
type AgentInfo struct {
	Name, Namespace string
}

// Mount is the host's storage for a task (SPEC §10): {mount.bucket}, {mount.prefix} and {mount.backend}, plus
// Files behind mount.read and mount.write in cel actions (nil: those calls fail).
type Mount struct {
	Bucket, Prefix, Backend string
	Files                   celenv.Mount
}

// Task is one running use of a tool by an agent (SPEC §0): it holds the bindings, the allow list, the backends
// initialized for it and its state in the Store. All methods are safe for concurrent use. A task lives until
// Close (or Detach, in this process), or until TaskConfig.ExpiresAt.
type Task struct {
	tool      *Tool
	id        string
	prefix    string // of the keys of the task's state in the Store (task_state.go)
	cfg       TaskConfig
	bindings  map[string]any
	functions map[string]*action // by LLM-facing name
	funcNames []string           // the LLM-facing names, in manifest order
	allow     *allowlist.List
	secrets   *redact.Set
	values    taskValues
	events    taskEvents         // the event side: timeouts, interruption, delivery ids, background receivers
	snap      *stateSnapshot     // the state RestoreTasks read ahead, while the task is being resumed; else nil
	procs     *runtime.Processes // Limits.MaxProcesses
	allowKept bool               // the resumed allow list holds exactly the stored one

	gate   gate
	ctx    context.Context // ends when the task closes; calls derive their cancellation from it
	cancel context.CancelFunc
	stop   func() bool // stops the expiry timer

	mu        sync.Mutex
	closed    bool
	running   map[uint64]context.CancelFunc // the running calls' cancellations, for close
	runSeq    uint64
	watchers  []watcher // routers holding the task
	instances map[string]*instance
	calls     flight // the calls in the task (enter, leave)
	closeOnce sync.Once
	closeErr  error

	callSeq   atomic.Uint64
	factSeq   atomic.Uint64
	callCount atomic.Int64
	failures  atomic.Int64
	allowMu   sync.Mutex                // serialises allow-list persistence
	routes    taskRoutes                // store mode: router_route_writes.go
	activity  activity                  // router_activity.go
	encCache  atomic.Pointer[encodings] // task_call_secrets.go
}

// instance is a backend initialized for the task, or being initialized.
type instance struct {
	done chan struct{} // closed under the task's mu, once inst and err are set
	inst runtime.Instance
	err  error
	// abandoned (under the task's mu): close stopped waiting for Initialize, so the call that runs it tears down
	// what it produces.
	abandoned bool
}

// NewTask starts a task (SPEC §3.3): it checks the capability's bindings — every key must be a declared
// parameter, every require_binding parameter must be bound, every value must satisfy its schema; all problems are
// returned together as a *ValidationError with paths such as bindings.repo — creates the allow list with the
// bound entries sealed, and reports the tool.catalog.resolved fact.
//
// ctx bounds this call only (the Store operations that start the task), as in any Go API: the task outlives it, so
// a task made inside an HTTP handler with the request's context lives on after the response. It keeps ctx's
// values. The task lives until Close, or until cfg.ExpiresAt when the host gives one.
func (t *Tool) NewTask(ctx context.Context, cfg TaskConfig) (*Task, error) {
	task, err := t.startTask(ctx, cfg, false, nil)
	return task, t.startFailed(cfg, err)
}

// startTask starts a new task, or with resume rebuilds a stored one.
func (t *Tool) startTask(ctx context.Context, cfg TaskConfig, resume bool, snap *stateSnapshot) (*Task, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	problems := append(t.checkBindings(cfg.Capability.Bindings), t.checkApproval(cfg)...)
	problems = append(problems, t.checkContext(cfg)...)
	problems = append(problems, checkTaskID(cfg.ID)...)
	if !resume && !cfg.ExpiresAt.IsZero() && !cfg.ExpiresAt.After(t.opts.clock.Now()) {
		problems = append(problems, Problem{Path: "expires_at", Type: "invalid",
			Detail: "the task would expire before it starts (" + cfg.ExpiresAt.UTC().Format(time.RFC3339) + ")"})
	}
	if len(problems) > 0 {
		return nil, &ValidationError{Problems: problems}
	}
	task := &Task{
		tool:      t,
		id:        cfg.ID,
		cfg:       cfg,
		bindings:  cfg.Capability.Bindings,
		allow:     allowlist.New(t.opts.limits.AllowListValues),
		secrets:   t.secrets.Clone(),
		instances: map[string]*instance{},
		snap:      snap,
		procs:     runtime.NewProcesses(t.opts.limits.MaxProcesses),
	}
	if task.id == "" {
		task.id = newID("task_")
	}
	task.prefix = "tasks/" + t.Namespace() + "/" + t.Name() + "/" + task.id + "/"
	base := ctx // the task keeps ctx's values, not its end: Close ends the task (and the watch below, ctx's end)
	if ctx.Done() != nil {
		base = context.WithoutCancel(ctx)
	}
	task.ctx, task.cancel = context.WithCancel(base)
	task.events.init(task, t, task.ctx, cfg)
	task.functions, task.funcNames = t.functionTable(cfg.Capability)
	for name, v := range task.bindings {
		task.allow.Seal(name, v)
		if t.secretParams[name] {
			task.secrets.Add(textOf(v))
		}
	}
	task.values = newTaskValues(task)
	if resume {
		if err := task.restore(ctx); err != nil {
			task.cancel()
			return nil, task.secrets.Error(fmt.Errorf("tool: resume task %s: %w", task.id, err))
		}
	} else if cfg.ID != "" {
		if err := task.fresh(ctx); err != nil {
			task.cancel()
			return nil, err
		}
	}
	// A task resumed from a snapshot that holds its state already writes nothing back.
	keepEvents := !task.events.stored() || task.unchanged("events", task.events.marshal)
	keepAllow := task.snap != nil && task.allowKept
	task.snap = nil // from here on the task reads and writes the Store
	if !keepEvents {
		if err := task.putExpiry(ctx); err != nil { // store mode: the expiry index before the event state
			task.cancel()
			return nil, err
		}
		if err := task.events.save(ctx); err != nil {
			task.cancel()
			return nil, err
		}
	}
	if !keepAllow {
		if err := task.putAllRoutes(ctx); err != nil { // store mode: the routes before the list
			task.cancel()
			return nil, fmt.Errorf("tool: new task %s: %w", task.id, err)
		}
		if err := task.saveAllowList(ctx); err != nil {
			task.cancel()
			return nil, fmt.Errorf("tool: new task %s: %w", task.id, err)
		}
	}
	if t.opts.observer != nil { // the catalog is built only for an Observer
		task.observe(ctx, facts.CatalogResolved, "", map[string]any{"catalog": t.Catalog(cfg.Capability)})
	}
	t.openTasks.Add(1) // from here on the task ends only by close
	if err := task.lifetime(); err != nil {
		return nil, err
	}
	task.events.started() // the start is the first activity: a resumed task's timeouts count from it
	task.activity.left.Store(t.opts.clock.Now().UnixNano())
	return task, nil
}

// Functions returns the functions to offer the LLM for this task: Tool.Functions of the task's own capability,
// named as InvokeFunction takes them.
func (t *Task) Functions() []Function { return t.tool.Functions(t.cfg.Capability) }

// Catalog returns the tool's catalog (Tool.Catalog) for the task's own capability.
func (t *Task) Catalog() []CatalogEntry { return t.tool.Catalog(t.cfg.Capability) }

// ID returns the task's ID.
func (t *Task) ID() string { return t.id }

// Tool returns the tool the task runs.
func (t *Task) Tool() *Tool { return t.tool }

// AllowList returns a snapshot of the allow list (SPEC §6): each parameter name with its values as canonical text,
// sorted.
func (t *Task) AllowList() map[string][]string { return t.allow.Snapshot() }

// Close ends the task: calls still running are cancelled and waited for (as long as ctx allows), every backend
// initialized for the task is torn down exactly once, each within the teardown bound (Limits.TeardownTimeout),
// and the task's state is removed from the Store. Close is idempotent; later calls return the first result.
// Afterwards every method that does work returns ErrClosed.
func (t *Task) Close(ctx context.Context) error {
	t.closeOnce.Do(func() { t.closeErr = t.close(ctx, false) })
	return t.closeErr
}

// Detach ends the task in this process without ending it (SPEC §13): calls are cancelled and waited for, and
// later ones return ErrClosed, as after Close, but nothing the task holds elsewhere is removed — subscriptions stay
// registered, sessions are not destroyed, and the state stays in the Store — so that another process (a new
// version of the host, another replica) continues it with Tool.RestoreTask. What lives only in this process ends:
// polls and renewals stop here, exec and stdio MCP processes are torn down. Close or Detach, whichever comes
// first, ends the task; the other then does nothing.
func (t *Task) Detach(ctx context.Context) error {
	t.closeOnce.Do(func() { t.closeErr = t.close(ctx, true) })
	return t.closeErr
}

func (t *Task) close(ctx context.Context, detach bool) error {
	t.mu.Lock()
	t.closed = true
	stop := t.stop
	watchers := t.watchers
	t.watchers = nil
	t.cancel() // under mu: a call that sees closed also sees its context cancelled
	running := t.running
	t.running = nil
	t.mu.Unlock()
	for _, cancel := range running {
		cancel()
	}
	if stop != nil {
		stop()
	}
	for _, w := range watchers {
		w.closed(t)
	}

	var errs []error
	if err := t.events.close(ctx, detach); err != nil {
		errs = append(errs, err)
	}
	if !t.calls.wait(ctx) {
		errs = append(errs, fmt.Errorf("calls still running: %w", ctx.Err()))
	}

	t.mu.Lock()
	instances := t.instances
	t.instances = nil
	t.mu.Unlock()
	keep := map[string]bool{} // backends whose state must outlive the task: their teardown did not complete
	for kind, in := range instances {
		// Initialize runs on the task's context, which is cancelled by now, so it ends soon; every successful
		// Initialize is torn down, within the teardown bound, even when ctx has already ended (SPEC §7.4).
		if !t.settled(in) {
			keep[kind] = true
			errs = append(errs, fmt.Errorf("initialize %s did not end within the teardown bound", kind))
			continue
		}
		if in.inst == nil {
			continue
		}
		if d, ok := in.inst.(runtime.Detacher); ok && detach {
			if err := d.Detach(ctx); err != nil {
				errs = append(errs, fmt.Errorf("detach %s: %w", kind, err))
			}
			continue
		}
		if err := t.teardown(ctx, kind, in.inst); err != nil {
			keep[kind] = true
			errs = append(errs, err)
		}
	}
	if detach {
		if err := t.events.saveChanged(ctx); err != nil { // the last activity, for the resumed task's timeouts
			errs = append(errs, err)
		}
		t.observe(ctx, facts.TaskDetached, "", nil)
	} else {
		if err := t.deleteState(ctx, keep); err != nil {
			t.storeFailed(ctx, "delete", recordTask, err)
			errs = append(errs, err)
		}
		if err := t.deleteRoutes(ctx); err != nil { // store mode: after the state, so no route outlives it unread
			errs = append(errs, err)
		}
		if err := t.deleteExpiry(ctx); err != nil {
			errs = append(errs, err)
		}
		t.observe(ctx, facts.TaskClosed, "", nil)
	}
	t.tool.taskEnded()
	if len(errs) == 0 {
		return nil
	}
	return t.secrets.Error(fmt.Errorf("tool: close task %s: %w", t.id, errors.Join(errs...)))
}

// watcher is told about a task's allow-list changes and its end: a Router keeps its index with them.
type watcher interface {
	grown(t *Task, added map[string]any, evicted map[string][]string)
	closed(t *Task)
}

// watch registers w; it fails with ErrClosed once the task is closed.
func (t *Task) watch(w watcher) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	t.watchers = append(t.watchers, w)
	return nil
}

// unwatch removes w.
func (t *Task) unwatch(w watcher) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.watchers = slices.DeleteFunc(t.watchers, func(x watcher) bool { return x == w })
}

// notifyGrown tells the watchers which values a call added and which the caps evicted.
func (t *Task) notifyGrown(added map[string]any, evicted map[string][]string) {
	t.mu.Lock()
	watchers := slices.Clone(t.watchers)
	t.mu.Unlock()
	for _, w := range watchers {
		w.grown(t, added, evicted)
	}
}

// settled waits, for the teardown bound on the Tool's Clock, until in's Initialize has ended, and reports
// whether it did. When the bound passes first, in is abandoned: the call that runs Initialize tears down what it
// produces (initialize), so that no goroutine of close's waits for it.
func (t *Task) settled(in *instance) bool {
	select {
	case <-in.done:
		return true
	default:
	}
	timer := t.tool.opts.clock.NewTimer(t.tool.opts.limits.TeardownTimeout)
	defer timer.Stop()
	select {
	case <-in.done:
		return true
	case <-timer.C():
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-in.done: // it ended as the bound passed
		return true
	default:
		in.abandoned = true
		return false
	}
}

// flight counts work in flight, as a sync.WaitGroup does, and is waited for within a context with no goroutine:
// work that never ends leaves nothing behind but itself. The zero value is ready to use.
type flight struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // made by a waiter, closed when n drops to zero; nil while nobody waits
}

// add counts one more.
func (f *flight) add() {
	f.mu.Lock()
	f.n++
	f.mu.Unlock()
}

// done ends what add counted.
func (f *flight) done() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n--; f.n == 0 && f.idle != nil {
		close(f.idle)
		f.idle = nil
	}
}

// goFunc runs fn in a goroutine, counted until it returns.
func (f *flight) goFunc(fn func()) {
	f.add()
	go func() {
		defer f.done()
		fn()
	}()
}

// wait waits until nothing is in flight or ctx ends, and reports whether nothing is.
func (f *flight) wait(ctx context.Context) bool {
	f.mu.Lock()
	if f.n == 0 {
		f.mu.Unlock()
		return true
	}
	if f.idle == nil {
		f.idle = make(chan struct{})
	}
	idle := f.idle
	f.mu.Unlock()
	select {
	case <-idle:
		return true
	case <-ctx.Done():
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.n == 0
	}
}

// teardown runs one Teardown with its own bound: the host's ctx may already have ended (a shutdown), and a
// session left undestroyed would outlive the task.
func (t *Task) teardown(ctx context.Context, kind string, inst runtime.Instance) (err error) {
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.tool.opts.limits.TeardownTimeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("teardown %s panicked", kind)
		}
	}()
	err = inst.Teardown(tctx)
	if err != nil {
		err = fmt.Errorf("teardown %s: %w", kind, err)
		t.observe(ctx, facts.RuntimeTeardownFailed, "", map[string]any{"backend": kind, "error": err.Error()})
	}
	return err
}

// track registers the cancellation of a running call, which close calls, until untrack(id). On a closed task it
// cancels at once.
func (t *Task) track(cancel context.CancelFunc) (id uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		cancel()
		return 0
	}
	if t.running == nil {
		t.running = map[uint64]context.CancelFunc{}
	}
	t.runSeq++
	t.running[t.runSeq] = cancel
	return t.runSeq
}

func (t *Task) untrack(id uint64) {
	t.mu.Lock()
	delete(t.running, id)
	t.mu.Unlock()
}

// isClosed reports whether the task was closed or detached.
func (t *Task) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// enter registers a call; it fails once the task is closed.
func (t *Task) enter() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	t.calls.add()
	t.activity.running.Add(1)
	return nil
}

// instance returns the backend instance for a, initializing it on first use: once per task and backend kind,
// even under concurrent first calls. A failed Initialize is remembered (the task is over), except when the
// calling context ended it, so the next call tries again.
func (t *Task) instance(ctx context.Context, a *action, call *runtime.Call) (runtime.Instance, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, ErrClosed
	}
	in, ok := t.instances[a.kind]
	if ok {
		t.mu.Unlock()
		select {
		case <-in.done: // initialized: the usual case, which need not wait on ctx
		default:
			select {
			case <-in.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-t.ctx.Done():
				return nil, ErrClosed
			}
		}
		if in.err != nil && t.ctx.Err() != nil {
			return nil, ErrClosed
		}
		return in.inst, in.err
	}
	in = &instance{done: make(chan struct{})}
	t.instances[a.kind] = in
	t.mu.Unlock()

	// Initialize serves every call of the task, so the first caller's cancellation or deadline must not decide
	// it: it runs on the task's context, bounded by the call timeout.
	ictx, cancel := context.WithTimeout(t.ctx, t.tool.opts.limits.CallTimeout)
	defer cancel()
	t.initialize(ictx, a, call, in)
	if in.err != nil && t.ctx.Err() != nil {
		return nil, ErrClosed
	}
	return in.inst, in.err
}

// initialize runs the backend's Initialize into in, and closes in.done whatever happens. When close has
// abandoned in meanwhile (it waited for the teardown bound), what Initialize produced is torn down here and in
// holds ErrClosed.
func (t *Task) initialize(ctx context.Context, a *action, call *runtime.Call, in *instance) {
	inst, err := t.runInitialize(ctx, a, call)
	t.mu.Lock()
	abandoned := in.abandoned
	if abandoned {
		in.err = ErrClosed
	} else {
		in.inst, in.err = inst, err
	}
	close(in.done)
	t.mu.Unlock()
	if abandoned && inst != nil {
		_ = t.teardown(ctx, a.kind, inst) // close's error named it; a failure is reported as a fact
	}
}

// runInitialize runs the backend's Initialize; a panic becomes an unrecoverable error (its value is not kept: it
// could hold a secret).
func (t *Task) runInitialize(ctx context.Context, a *action, call *runtime.Call) (inst runtime.Instance, err error) {
	defer func() {
		if r := recover(); r != nil {
			inst, err = nil, runtime.Unrecoverable(fmt.Errorf("initialize %s panicked", a.kind))
		}
	}()
	inst, err = a.backend.Initialize(ctx, t.initFor(ctx, a, call))
	if err != nil {
		return nil, runtime.Unrecoverable(fmt.Errorf("initialize %s: %w", a.kind, err))
	}
	return inst, nil
}

// runtimeLimits are the host's limits as backends see them.
func (o *options) runtimeLimits() runtime.Limits {
	l := o.limits
	return runtime.Limits{CallTimeout: l.CallTimeout, ResponseBytes: l.ResponseBytes, TeardownTimeout: l.TeardownTimeout}
}

func (t *Task) initFor(ctx context.Context, a *action, call *runtime.Call) *runtime.Init {
	o := t.tool.opts
	in := &runtime.Init{
		TaskID: t.id, Tool: t.tool.Name(), ToolNamespace: t.tool.Namespace(), Action: a.prepared, Actions: t.tool.preparedOf(a.kind),
		// Not bound to the triggering call's context: a session's destroy renders with these values at Close.
		Values:     &callValues{ctx: context.WithoutCancel(ctx), task: t, action: a.def.Name, args: call.Args},
		HTTPClient: t.tool.httpClient,
		Limits:     o.runtimeLimits(),
		State:      &backendState{task: t, key: t.stateKey("runtime/" + a.kind), record: recordBackend},
		Context:    t.cfg.Context,
		Runtime:    t.values.runtime,
		Now:        o.clock.Now,
		Observe:    t.observeExternal,
		Logger:     t.logger().With("tool", t.tool.Name(), "task", t.id, "backend", a.kind),
	}
	if t.cfg.Mount != nil && t.cfg.Mount.Files != nil {
		in.Mount = t.cfg.Mount.Files
	}
	in.CgroupParent = o.cgroupParent()
	in.Processes = t.procs
	if t.cfg.Elicitor != nil {
		in.Elicit = t.cfg.Elicitor.Elicit
	}
	if t.cfg.Sampler != nil {
		in.Sample = t.cfg.Sampler.Sample
	}
	in.Roots, in.Relay = t.cfg.Roots, t.cfg.MCPRelay
	in.Subject = t.cfg.Subject
	if t.cfg.MCPAuthorizer != nil {
		in.Authorizer = maskingAuthorizer{Authorizer: t.cfg.MCPAuthorizer, secrets: t.secrets, task: t}
	}
	return in
}

// maskFactData returns data with the secrets of s masked: as values in every string, and in their encoded forms
// too in the "error" field, where a backend's, a Store's or a server's message may quote a rendered URL or body.
func maskFactData(s *redact.Set, data map[string]any) map[string]any {
	if data == nil {
		return nil
	}
	masked, _ := s.Value(data).(map[string]any)
	if e, ok := masked["error"].(string); ok {
		if enc := s.Encoded(e); enc != e {
			masked = maps.Clone(masked) // Value may hand back the caller's map: never write into it
			masked["error"] = enc
		}
	}
	return masked
}

// observing reports whether anyone receives facts, so hot paths build fact data only when it is wanted.
func (t *Task) observing() bool { return t.tool.opts.observer != nil }

// observe reports a fact to the host's observer, with secrets masked.
func (t *Task) observe(ctx context.Context, name, callID string, data map[string]any) {
	obs := t.tool.opts.observer
	call, _ := ctx.Value(callObserverKey{}).(Observer)
	if obs == nil && call == nil {
		return
	}
	data = maskFactData(t.secrets, data)
	f := Fact{Name: name, Tool: t.tool.Name(), TaskID: t.id, CallID: callID, Seq: t.factSeq.Add(1),
		Time: t.tool.opts.clock.Now(), Data: data}
	if obs != nil {
		obs.Observe(ctx, f)
	}
	if call != nil {
		call.Observe(ctx, f)
	}
}

// newID returns prefix followed by 16 random hex digits.
func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// Call is a call started with Task.Start.
type Call struct {
	id     string
	cancel context.CancelFunc
	done   chan struct{}
	result *Result
	err    error
}

// ContextWithCallObserver returns a context whose calls also report their facts to obs, besides the Tool's observer:
// tool.progress and tool.log of an MCP server as they come, for a host that forwards them (mcpserve sends them to
// its own client). Secrets are masked as for the Tool's observer. obs must not block.
func ContextWithCallObserver(ctx context.Context, obs Observer) context.Context {
	return context.WithValue(ctx, callObserverKey{}, obs)
}

// ContextWithCallID returns a context that makes the next call made with it use id as its CallID (for example the
// LLM's tool-call id), instead of a generated one.
func ContextWithCallID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, callIDKey{}, id)
}

// BindingEnv is what an agent's binding expressions see (SPEC §3.3, §5 binding scope).
type BindingEnv struct {
	// Context is the task context (`context`, alias `c`, and {context.*}).
	Context map[string]any
	// Runtime is what `runtime` and {runtime.*} hold.
	Runtime RuntimeInfo
	// Now is the time `now` reports; zero means the current time.
	Now time.Time
}

// ResolveBindings turns the bindings of an agent capability, as an agent manifest writes them, into their values
// (SPEC §3.3): text containing a {token} is a template over context and runtime; any other text is compiled as
// CEL over context, runtime and now, and text that does not compile as CEL is a literal string ("octocat",
// "my-repo"). ctx bounds the CEL evaluations. The error names each binding that failed, by name and source,
// never a context value.
func ResolveBindings(ctx context.Context, bindings map[string]string, env BindingEnv) (map[string]any, error) {
	out := make(map[string]any, len(bindings))
	var failed []string
	var first error
	for _, name := range slices.Sorted(maps.Keys(bindings)) {
		v, err := resolveBinding(ctx, bindings[name], env)
		if err != nil {
			failed = append(failed, name)
			if first == nil {
				first = err
			}
			continue
		}
		out[name] = v
	}
	if first != nil {
		return nil, fmt.Errorf("tool: bindings %s could not be resolved: %w", strings.Join(failed, ", "), first)
	}
	return out, nil
}

// maxTaskID bounds a task ID's length in bytes.
const maxTaskID = 256

// checkTaskID refuses an ID that would not name one task's Store keys: with a '/', a control character or
// invalid UTF-8, or too long.
func checkTaskID(id string) []Problem {
	bad := ""
	switch {
	case len(id) > maxTaskID:
		bad = fmt.Sprintf("it is %d bytes long; at most %d", len(id), maxTaskID)
	case !utf8.ValidString(id):
		bad = "it is not valid UTF-8"
	case strings.Contains(id, "/"):
		bad = "it holds a '/', which separates the segments of the task's Store keys"
	case strings.IndexFunc(id, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		bad = "it holds a control or non-printing character"
	}
	if bad == "" {
		return nil
	}
	shown := id
	if len(shown) > 64 {
		shown = shown[:64] + "..."
	}
	return []Problem{{Path: "id", Type: "invalid", Detail: "the task ID " + strconv.QuoteToASCII(shown) + " is not usable: " + bad}}
}
