package subprocess

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/runtime"
)

// DefaultTimeout bounds a call when neither the action's timeout_ms nor the host's Limits set one (SPEC §14).
const DefaultTimeout = runtime.DefaultCallTimeout

// DefaultResponseBytes bounds a program's stdout (oneshot) or one reply line (server) when the host's Limits set
// no ResponseBytes (SPEC §14).
const DefaultResponseBytes = 10 << 20

// maxServerGrace bounds how long Teardown waits for a server to exit after its stdin is closed, before killing it.
const maxServerGrace = 5 * time.Second

// errClosed is returned by calls that arrive after Teardown started.
var errClosed = errors.New("exec: the task's processes are torn down")

// Initialize returns the task's instance. When in.Action is a server-mode action its process is started now
// (SPEC §7.8), its command rendered with in.Values; a program that cannot be started is an error wrapping
// runtime.ErrUnrecoverable. A recoverable failure to render the command line (runtime.Error, such as a missing
// auth token) leaves the server unstarted: the next call starts it, or reports that failure again. Oneshot
// actions start nothing here.
func (Backend) Initialize(ctx context.Context, in *runtime.Init) (runtime.Instance, error) {
	i := &instance{limits: in.Limits, logger: in.Logger, observe: in.Observe, cgroup: in.CgroupParent,
		procs: in.Processes, slots: map[*Action]*slot{}}
	if i.logger == nil {
		i.logger = slog.New(slog.DiscardHandler)
	}
	if i.observe == nil {
		i.observe = func(context.Context, string, map[string]any) {}
	}
	if act, ok := in.Action.(*Action); ok && act.Mode == ModeServer {
		if _, err := i.server(ctx, act, in.Values); err != nil {
			if !errors.Is(err, runtime.ErrUnrecoverable) {
				// A recoverable failure rendering the command line (an auth token briefly unavailable) must
				// not end the task: the call that triggered Initialize tries again and reports it, as a restart
				// would.
				return i, nil
			}
			_ = i.Teardown(ctx)
			return nil, err
		}
	}
	return i, nil
}

// instance runs a task's exec calls. It is safe for concurrent use.
type instance struct {
	limits  runtime.Limits
	logger  *slog.Logger
	observe func(context.Context, string, map[string]any)
	cgroup  string             // runtime.Init.CgroupParent
	procs   *runtime.Processes // runtime.Init.Processes: each process takes a slot
	ids     atomic.Uint64

	mu     sync.Mutex
	slots  map[*Action]*slot // server-mode actions, each with its process
	closed bool

	once        sync.Once
	teardownErr error
}

// slot is the server process of one server-mode action, across its one allowed restart.
type slot struct {
	mu     sync.Mutex
	srv    *server // the current process; nil before the first start
	deaths int     // processes that exited while the task ran
	failed error   // set after the second death or at Teardown: every later call gets it
}

// Invoke runs one call: a new process for a oneshot action, a JSON-RPC request to the action's server process
// for a server-mode one. Failures the LLM can correct or retry (an {"error"} reply, a non-zero exit, a timeout,
// output that is not JSON or too large, a server that exited and is restarted for the next call) are Results
// with Error set; a program that cannot be started or a server that exited twice is an error wrapping
// runtime.ErrUnrecoverable; ctx's cancellation kills a oneshot process and returns an error wrapping ctx.Err().
func (i *instance) Invoke(ctx context.Context, a runtime.Action, call *runtime.Call) (*runtime.Result, error) {
	act, ok := a.(*Action)
	if !ok {
		return nil, runtime.Unrecoverable(fmt.Errorf("exec: action of type %T", a))
	}
	if act.Mode == ModeServer {
		return i.request(ctx, act, call)
	}
	return i.oneshot(ctx, act, call)
}

// Teardown ends every server process: stdin closed, then, if it has not exited within a grace period (at most
// half of what ctx leaves, at most 5s), its process group killed. Oneshot processes end with their calls. It runs
// once; later calls return the first call's result. It fails only when a process could not be reaped before ctx
// ended.
func (i *instance) Teardown(ctx context.Context) error {
	i.once.Do(func() { i.teardownErr = i.teardown(ctx) })
	return i.teardownErr
}

func (i *instance) teardown(ctx context.Context) error {
	i.mu.Lock()
	i.closed = true
	slots := make([]*slot, 0, len(i.slots))
	for _, s := range i.slots {
		slots = append(slots, s)
	}
	i.mu.Unlock()
	errs := make([]error, len(slots))
	var wg sync.WaitGroup
	for n, sl := range slots {
		sl.mu.Lock()
		srv := sl.srv
		sl.failed = runtime.Unrecoverable(errClosed)
		sl.mu.Unlock()
		if srv != nil {
			wg.Go(func() { errs[n] = srv.stop(ctx) })
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (i *instance) responseBytes() int64 {
	if i.limits.ResponseBytes > 0 {
		return i.limits.ResponseBytes
	}
	return DefaultResponseBytes
}

// nextID returns a JSON-RPC id: positive and below 2^53, so that every JSON implementation reads it exactly.
func (i *instance) nextID() uint64 {
	const span = 1<<53 - 1
	return (i.ids.Add(1)-1)%span + 1
}

// callTimeout is the bound of one call: own when set, else the host's CallTimeout, else DefaultTimeout.
func callTimeout(own time.Duration, l runtime.Limits) time.Duration {
	switch {
	case own > 0:
		return own
	case l.CallTimeout > 0:
		return l.CallTimeout
	}
	return DefaultTimeout
}

// started reports a process that started for act: a fact naming its containment, and a warning when a cgroup
// was asked for but could not be made (the process then runs in a process group, which setsid escapes).
func (i *instance) started(ctx context.Context, fact string, act *Action, p *proc, data map[string]any) {
	if p.fallback != nil {
		i.logger.Warn("exec: the process runs in a process group, not a cgroup", "action", act.Name, "error", p.fallback)
	}
	data["action"], data["pid"], data["containment"] = act.Name, p.pid, p.box.Mode()
	i.observe(context.WithoutCancel(ctx), fact, data)
}

// render resolves the action's command line for one process with values, and reads the forwarded environment.
func (i *instance) render(a *Action, values interp.Resolver) (spec, error) {
	s := spec{dir: a.Dir, args: make([]string, len(a.Args)), cgroup: i.cgroup, procs: i.procs,
		what: "the program of exec action " + a.Name}
	if a.Mode == ModeServer {
		s.what = "the server of exec action " + a.Name
	}
	s.env, s.redact = environ(a.Env)
	var err error
	if s.path, err = a.Command.RenderString(values); err != nil {
		return spec{}, renderError("command", err)
	}
	if s.path == "" {
		return spec{}, runtime.Unrecoverable(errors.New("exec: the command renders empty"))
	}
	for n, t := range a.Args {
		if s.args[n], err = t.RenderString(values); err != nil {
			return spec{}, renderError(fmt.Sprintf("args[%d]", n), err)
		}
		if strings.IndexByte(s.args[n], 0) >= 0 {
			return spec{}, runtime.Errorf(runtime.KindInvalidArguments, "args[%d]: the value contains a NUL byte", n)
		}
	}
	return s, nil
}

// renderError keeps a recoverable resolver error (a missing auth token) recoverable and makes any other failure
// unrecoverable, naming the field; resolver errors never carry values.
func renderError(part string, err error) error {
	if rerr, ok := errors.AsType[*runtime.Error](err); ok {
		out := *rerr
		out.Message = part + ": " + rerr.Message
		return &out
	}
	return runtime.Unrecoverable(fmt.Errorf("exec: rendering %s: %w", part, err))
}

var _ runtime.Instance = (*instance)(nil)
