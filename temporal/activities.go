package temporaltool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/worker"

	tool "github.com/commonagents-go/tool"
)

// The names the activities are registered under (Register) and scheduled by (Start, Invoke, ...).
const (
	ActivityStartTask = "commonagents.tool.StartTask"
	ActivityInvoke    = "commonagents.tool.Invoke"
	ActivityFunctions = "commonagents.tool.Functions"
	ActivityTouch     = "commonagents.tool.Touch"
	ActivityCloseTask = "commonagents.tool.CloseTask"
)

// DefaultMaxResultBytes bounds Outcome.Text by default: half the SDK's payload warning size (512 KiB), since a
// result rides again in the transcript of the next model turn.
const DefaultMaxResultBytes = 256 << 10

// DefaultRetryAfterAttempts is how many attempts an idempotent call refused with a Retry-After gets by default.
const DefaultRetryAfterAttempts = 3

// Activities are the activities a worker registers (Register). Every activity lends the task it names through
// Router (Router.Task), so the Router must serve each Tool in store mode, with a Hydrator whose configuration is
// Config's. The fields are read, never written: set them before Register; the methods are safe for concurrent
// use.
type Activities struct {
	// Router lends the tasks; Tools are the Tools it serves, by "namespace/name", for StartTask's NewTask.
	Router *tool.Router
	Tools  map[string]*tool.Tool
	// Config is the configuration of a new task (its capability, Sink, Approver, context): the host's record of
	// the task, never something a workflow or a signal sent, so that no secret binding enters the history. ID and
	// ExpiresAt are set from StartInput. An error whose chain holds tool.ErrNotFound declines the task
	// (ErrorTaskGone); other errors are retried.
	Config func(ctx context.Context, ref TaskRef) (tool.TaskConfig, error)
	// MaxResultBytes bounds Outcome.Text (default DefaultMaxResultBytes): a longer text reaches the model as
	// {"omitted": reason}, and the activity succeeds. Set the Tool's Limits.ResultBytes at or below it, so that
	// the library omits first and keeps the output in ServerData for the host's logs.
	MaxResultBytes int
	// RetryAfterAttempts is how many attempts an idempotent call refused with a Retry-After (429, 503) gets
	// before the refusal goes to the model (default DefaultRetryAfterAttempts).
	RetryAfterAttempts int32
}

// Register registers a's activities with w under the Activity* names.
func Register(w worker.ActivityRegistry, a *Activities) {
	w.RegisterActivityWithOptions(a.StartTask, activity.RegisterOptions{Name: ActivityStartTask})
	w.RegisterActivityWithOptions(a.Invoke, activity.RegisterOptions{Name: ActivityInvoke})
	w.RegisterActivityWithOptions(a.Functions, activity.RegisterOptions{Name: ActivityFunctions})
	w.RegisterActivityWithOptions(a.Touch, activity.RegisterOptions{Name: ActivityTouch})
	w.RegisterActivityWithOptions(a.CloseTask, activity.RegisterOptions{Name: ActivityCloseTask})
}

// StartTask makes the task in.Task, or lends it when the Store holds it already (an earlier attempt made it, or
// in.MustExist), and returns what the workflow needs of it. Errors: ErrorTaskGone when in.MustExist and the task
// is not stored, or Config declines it; ErrorInvalid for an unknown tool or a configuration NewTask refuses;
// others (a Store outage) are retryable.
func (a *Activities) StartTask(ctx context.Context, in StartInput) (TaskInfo, error) {
	if err := checkVersion(in.V); err != nil {
		return TaskInfo{}, err
	}
	tl, err := a.tool(in.Task)
	if err != nil {
		return TaskInfo{}, err
	}
	if !in.MustExist {
		info, err := a.create(ctx, tl, in)
		if !errors.Is(err, tool.ErrTaskExists) {
			return info, err
		}
	}
	return a.Functions(ctx, in.Task)
}

// create makes the task with NewTask and detaches it at once: the Store holds it, and every activity lends it.
func (a *Activities) create(ctx context.Context, tl *tool.Tool, in StartInput) (TaskInfo, error) {
	cfg, err := a.config(ctx, in.Task)
	if err != nil {
		return TaskInfo{}, err
	}
	cfg.ID, cfg.ExpiresAt = in.Task.ID, in.ExpiresAt
	t, err := tl.NewTask(ctx, cfg)
	var verr *tool.ValidationError
	switch {
	case errors.As(err, &verr):
		return TaskInfo{}, invalid("temporaltool: task %s: %v", in.Task.ID, err)
	case err != nil:
		return TaskInfo{}, fatal(err)
	}
	info := infoOf(t, cfg)
	if err := t.Detach(ctx); err != nil {
		return TaskInfo{}, fmt.Errorf("temporaltool: detach the new task %s: %w", in.Task.ID, err)
	}
	return info, nil
}

// Functions lends the task and returns its functions and event timeouts, as StartTask does.
func (a *Activities) Functions(ctx context.Context, ref TaskRef) (TaskInfo, error) {
	t, release, err := a.lend(ctx, ref)
	if err != nil {
		return TaskInfo{}, err
	}
	defer release()
	cfg, err := a.config(ctx, ref)
	if err != nil {
		return TaskInfo{}, err
	}
	return infoOf(t, cfg), nil
}

// Touch lends the task and counts the present as its activity (Task.Touch), so that a long model turn does not
// expire an event the task waits for (SPEC §9.5). The touch is written to the Store when the task leaves the
// worker's cache.
func (a *Activities) Touch(ctx context.Context, ref TaskRef) error {
	t, release, err := a.lend(ctx, ref)
	if err != nil {
		return err
	}
	t.Touch()
	release()
	return nil
}

// CloseTask closes the task wherever it is stored (Router.CloseTask); a task that is gone already counts as
// closed, so that a retried attempt succeeds.
func (a *Activities) CloseTask(ctx context.Context, ref TaskRef) error {
	err := a.Router.CloseTask(ctx, ref.Namespace, ref.Tool, ref.ID)
	if err == nil || gone(err) != nil && !errors.Is(err, tool.ErrClosed) {
		return nil
	}
	return err // the Router closed (retry on another worker) or a Store outage
}

// lend lends ref's task, mapping the library's errors to the activity's.
func (a *Activities) lend(ctx context.Context, ref TaskRef) (*tool.Task, func(), error) {
	if _, err := a.tool(ref); err != nil {
		return nil, nil, err
	}
	t, release, err := a.Router.Task(ctx, ref.Namespace, ref.Tool, ref.ID)
	if err != nil {
		if errors.Is(err, tool.ErrClosed) {
			return nil, nil, err // this worker's Router is closing: another worker can lend it
		}
		return nil, nil, fatal(err)
	}
	return t, release, nil
}

// tool returns ref's Tool.
func (a *Activities) tool(ref TaskRef) (*tool.Tool, error) {
	tl := a.Tools[ref.Namespace+"/"+ref.Tool]
	if tl == nil {
		return nil, invalid("temporaltool: this worker does not serve the tool %s/%s", ref.Namespace, ref.Tool)
	}
	return tl, nil
}

// config calls Config; a declined task is gone.
func (a *Activities) config(ctx context.Context, ref TaskRef) (tool.TaskConfig, error) {
	if a.Config == nil {
		return tool.TaskConfig{}, nil
	}
	cfg, err := a.Config(ctx, ref)
	if err != nil {
		return tool.TaskConfig{}, fatal(fmt.Errorf("temporaltool: configuration of task %s: %w", ref.ID, err))
	}
	return cfg, nil
}

// infoOf is t's TaskInfo.
func infoOf(t *tool.Task, cfg tool.TaskConfig) TaskInfo {
	info := TaskInfo{V: Version}
	entries := map[string]tool.CatalogEntry{}
	for _, e := range t.Catalog() {
		entries[e.Function] = e
	}
	for _, f := range t.Functions() {
		e := entries[f.Name]
		info.Functions = append(info.Functions, FunctionInfo{Name: f.Name, Description: f.Description,
			Parameters: f.Parameters, Idempotent: e.IsIdempotent, ReadOnly: e.IsReadOnly,
			ConcurrencySafe: e.IsConcurrencySafe})
	}
	for _, ev := range t.Tool().Manifest().Events {
		// SPEC §9.5: the capability's, else the event's, at most its max_timeout (Load checked both). The
		// host's Limits.MaxEventTimeout has no accessor: a host that sets it caps the wait itself.
		d := cfg.Capability.EventTimeout
		if d <= 0 && ev.Timeout != "" {
			d, _ = time.ParseDuration(ev.Timeout)
		}
		if max, _ := time.ParseDuration(ev.MaxTimeout); max > 0 && (d <= 0 || d > max) {
			d = max
		}
		if d > 0 {
			if info.EventTimeouts == nil {
				info.EventTimeouts = map[string]time.Duration{}
			}
			info.EventTimeouts[ev.Name] = d
		}
	}
	return info
}
