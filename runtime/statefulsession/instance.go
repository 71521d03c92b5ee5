package statefulsession

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/internal/httpspec"
	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/runtime"
	"github.com/commonagents-go/tool/runtime/statelesshttp"
)

// DefaultTeardownTimeout bounds the state saves and the late destroy of a session whose create outlived Teardown,
// when the host's Limits set no TeardownTimeout (SPEC §14).
const DefaultTeardownTimeout = runtime.DefaultTeardownTimeout

// errClosed is returned by calls that arrive after Teardown started.
var errClosed = errors.New("stateful_session: the task's sessions are torn down")

// Initialize creates the session of in.Action: its create request rendered with in.Values, then extract over the
// JSON response. Any failure to create the session (a status ≥ 400, an unreachable endpoint, a timeout, an
// extract path without a match) wraps runtime.ErrUnrecoverable; a cancelled ctx returns an error wrapping
// context.Canceled. Sessions recorded in in.State by an earlier process are kept and destroyed at Teardown when
// an action of this instance uses their key.
func (Backend) Initialize(ctx context.Context, in *runtime.Init) (runtime.Instance, error) {
	act, err := action(in.Action)
	if err != nil {
		return nil, err
	}
	i, err := newInstance(ctx, in)
	if err != nil {
		return nil, err
	}
	if _, err := i.session(ctx, act, in.Values); err != nil {
		return nil, err
	}
	return i, nil
}

// Resume returns an instance holding the sessions an earlier process recorded in in.State, without creating one:
// at Teardown each is destroyed with the destroy request of an action in in.Actions that uses its key, rendered
// with in.Values (the resumed task's bindings; the values of the call that created it are gone).
func (Backend) Resume(ctx context.Context, in *runtime.Init) (runtime.Instance, error) {
	i, err := newInstance(ctx, in)
	if err != nil {
		return nil, err
	}
	for _, a := range in.Actions {
		if act, err := action(a); err == nil {
			i.adopt(act, in.Values)
		}
	}
	return i, nil
}

// newInstance returns an instance with no session yet, holding the sessions in.State records as leftovers.
func newInstance(ctx context.Context, in *runtime.Init) (*instance, error) {
	if in.HTTPClient == nil || in.State == nil {
		return nil, runtime.Unrecoverable(errors.New("stateful_session: Init lacks an HTTP client or a state slot"))
	}
	i := &instance{
		client: in.HTTPClient, limits: in.Limits, state: in.State, observe: in.Observe, logger: in.Logger,
		sessions: map[string]*session{},
	}
	data, err := in.State.Load(ctx)
	if err != nil {
		return nil, runtime.Unrecoverable(fmt.Errorf("stateful_session: loading task state: %w", err))
	}
	recs, err := decodeState(data)
	if err != nil {
		// A record that cannot be read cannot be destroyed either; refusing the task would not help.
		i.logger.Warn("stateful_session: ignoring unreadable task state", "task", in.TaskID, "error", err)
	}
	for _, r := range recs {
		i.leftovers = append(i.leftovers, &session{key: r.Key, values: r.Values, created: r.CreatedAt, ready: true})
	}
	return i, nil
}

// instance holds a task's sessions. It is safe for concurrent use.
type instance struct {
	client  *http.Client
	limits  runtime.Limits
	state   runtime.State
	observe func(context.Context, string, map[string]any)
	logger  *slog.Logger

	saveMu sync.Mutex // orders saves, so the last one written holds the newest snapshot

	mu        sync.Mutex
	sessions  map[string]*session // by Action.Session
	leftovers []*session          // recorded by an earlier process; act is set once an action uses the key
	closed    bool                // Teardown started: no session is created any more

	once        sync.Once
	teardownErr error
}

// session is one remote session. Its fields are guarded by instance.mu.
type session struct {
	key     string
	act     *Action         // the action whose create, extract and destroy define the session
	render  interp.Resolver // non-session roots for destroy: those of the call that created the session
	values  map[string]any  // extracted; set when ready
	created time.Time
	ready   bool          // created, values set
	pending chan struct{} // non-nil while a create runs; closed when it ends
	failed  error         // the create failed for good
	orphan  bool          // Teardown ended while the create ran: the creator destroys the session
	claimed bool          // a destroy was started (or is not needed): never destroy twice
	gone    bool          // destroyed, or needs no destroy: no longer recorded in the state
}

func action(a runtime.Action) (*Action, error) {
	act, ok := a.(*Action)
	if !ok || act.Create == nil || act.Execute == nil {
		return nil, runtime.Unrecoverable(fmt.Errorf("stateful_session: not a prepared stateful_session action (%T)", a))
	}
	return act, nil
}

// Invoke runs the action's execute request with {session.*} answered by its session, which is created first if
// this is the action's first call (once, however many calls arrive together). The create and the execute are each
// bounded by the action's timeout (else Limits.CallTimeout, else 30s) and by ctx. Errors are classified as in
// Initialize for the create and as httpspec.Compiled.Exchange classifies them for the execute.
func (i *instance) Invoke(ctx context.Context, a runtime.Action, call *runtime.Call) (*runtime.Result, error) {
	act, err := action(a)
	if err != nil {
		return nil, err
	}
	s, err := i.session(ctx, act, call.Values)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, statelesshttp.CallTimeout(act.Timeout, i.limits))
	defer cancel()
	return act.Execute.Exchange(ctx, i.client, withSession{s.values, call.Values}, i.limits.ResponseBytes,
		act.ResponsePath)
}

// session returns act's session, created with values if it does not exist yet. Concurrent callers wait for the
// one create in flight; a create that ctx cancelled leaves the session to the next caller.
func (i *instance) session(ctx context.Context, act *Action, values interp.Resolver) (*session, error) {
	for {
		i.mu.Lock()
		if i.closed {
			i.mu.Unlock()
			return nil, runtime.Unrecoverable(errClosed)
		}
		s := i.sessions[act.Session]
		if s == nil {
			s = &session{key: act.Session, act: act}
			i.sessions[act.Session] = s
			i.adopt(act, values)
		}
		switch {
		case s.ready:
			i.mu.Unlock()
			return s, nil
		case s.failed != nil:
			i.mu.Unlock()
			return nil, s.failed
		case s.pending == nil:
			s.pending = make(chan struct{})
			i.mu.Unlock()
			return i.create(ctx, s, values)
		}
		wait := s.pending
		i.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, fmt.Errorf("stateful_session: waiting for session %s: %w", act.Session, ctx.Err())
		}
	}
}

// adopt gives the leftovers of act's key an action and a resolver to destroy them with. i.mu is held.
func (i *instance) adopt(act *Action, values interp.Resolver) {
	for _, l := range i.leftovers {
		if l.key == act.Session && l.act == nil {
			l.act, l.render = act, values
		}
	}
}

// create runs s's create request; s.pending is set and is closed when create returns.
func (i *instance) create(ctx context.Context, s *session, values interp.Resolver) (*session, error) {
	cctx, cancel := context.WithTimeout(ctx, statelesshttp.CallTimeout(s.act.Timeout, i.limits))
	vals, status, err := i.createRequest(cctx, s, values)
	cancel()

	i.mu.Lock()
	close(s.pending)
	s.pending = nil
	if err == nil {
		s.values, s.render, s.created, s.ready = vals, values, time.Now().UTC(), true
	} else if !errors.Is(err, context.Canceled) {
		s.failed = err
	}
	orphan := err == nil && s.orphan && !s.claimed
	s.claimed = s.claimed || orphan
	i.mu.Unlock()
	if err != nil {
		return nil, err
	}

	i.save(context.WithoutCancel(ctx))
	i.observe(ctx, facts.SessionCreated, map[string]any{"session": s.key, "status": status, "keys": slices.Sorted(maps.Keys(vals))})
	if orphan {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), i.teardownTimeout())
		defer cancel()
		if err := i.destroy(dctx, s); err != nil {
			i.logger.Warn("stateful_session: destroying a session created after teardown failed", "error", err)
		}
		return nil, runtime.Unrecoverable(errClosed)
	}
	return s, nil
}

// createRequest sends s's create and extracts the session values from the response.
func (i *instance) createRequest(ctx context.Context, s *session, values interp.Resolver) (map[string]any, int, error) {
	fail := func(err error) (map[string]any, int, error) {
		if errors.Is(err, context.Canceled) && !errors.Is(err, runtime.ErrUnrecoverable) {
			return nil, 0, fmt.Errorf("stateful_session: creating session %s: %w", s.key, err)
		}
		return nil, 0, runtime.Unrecoverable(fmt.Errorf("stateful_session: creating session %s: %s", s.key, err))
	}
	req, err := s.act.Create.Build(ctx, values)
	if err != nil {
		return fail(err)
	}
	resp, err := httpspec.Do(ctx, i.client, req, i.limits.ResponseBytes)
	if err != nil {
		return fail(err)
	}
	vals := make(map[string]any, len(s.act.Extract))
	for key, path := range s.act.Extract {
		v := httpspec.Output(resp.Body, path)
		if v == nil {
			return fail(fmt.Errorf("extract %s: %s matches nothing in the create response", key, path.String()))
		}
		vals[key] = v
	}
	return vals, resp.Status, nil
}

func (i *instance) teardownTimeout() time.Duration {
	if i.limits.TeardownTimeout > 0 {
		return i.limits.TeardownTimeout
	}
	return DefaultTeardownTimeout
}

// withSession answers {session.*} from a session's values and every other root from next.
type withSession struct {
	values map[string]any
	next   interp.Resolver
}

// Resolve implements interp.Resolver. A path below a session value that does not exist is null.
func (r withSession) Resolve(ref interp.Ref) (any, error) {
	if ref.Root == interp.RootSession {
		v, _ := interp.Lookup(r.values, ref.Steps)
		return v, nil
	}
	if r.next == nil {
		return nil, runtime.Unrecoverable(fmt.Errorf("no values for {%s}", ref.Text))
	}
	return r.next.Resolve(ref)
}

var _ runtime.Instance = (*instance)(nil)
var _ runtime.Resumer = Backend{}
