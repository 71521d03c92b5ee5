// Package celexpr is the cel action backend (SPEC §7.2): the action's output is the value of a CEL expression over
// the task context and the call's input. Importing the root package registers it.
package celexpr

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commonagents-go/tool/celenv"
	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/runtime"
)

// Kind is the execute-block key of this backend.
const Kind = "cel"

func init() { runtime.Default().MustRegister(Backend{}) }

// Config is an action's cel block.
type Config struct {
	Expression string `json:"expression"`
}

// Action is a prepared cel action.
type Action struct {
	Program *celenv.Program
}

// Traits reports a local, read-only computation.
func (a *Action) Traits() runtime.Traits {
	return runtime.Traits{ReadOnly: true, Idempotent: true, ConcurrencySafe: true, Owner: "local",
		Capabilities: []string{"read"}}
}

// Backend implements runtime.Runtime for cel.
type Backend struct{}

// Kind returns "cel".
func (Backend) Kind() string { return Kind }

// Prepare compiles the expression in the action scope.
func (Backend) Prepare(_ context.Context, b *runtime.Block) (runtime.Action, error) {
	var cfg Config
	errs := b.Decode(&cfg)
	if b.Shared != nil {
		errs.Add(field.Forbidden(b.SharedPath, "cel has no shared top-level block"))
	}
	a := &Action{}
	if cfg.Expression == "" {
		errs.Add(field.Required(b.Path.Child("expression"), "expression is required"))
	} else {
		p, e := b.Check.CEL(b.Path.Child("expression"), cfg.Expression, celenv.ScopeAction)
		errs = append(errs, e...)
		a.Program = p
	}
	return a, errs.Err()
}

// Initialize captures what the expressions of the task see: context, runtime, the clock and the mount.
func (Backend) Initialize(_ context.Context, in *runtime.Init) (runtime.Instance, error) {
	inst := &instance{context: in.Context, runtime: in.Runtime, mount: in.Mount, clock: &nowText{now: in.Now}}
	if inst.context == nil {
		inst.context = map[string]any{}
	}
	if inst.runtime == nil {
		inst.runtime = map[string]any{}
	}
	if inst.clock.now == nil {
		inst.clock.now = time.Now
	}
	return inst, nil
}

type instance struct {
	context, runtime map[string]any
	mount            celenv.Mount
	clock            *nowText
}

var varsPool = sync.Pool{New: func() any { return make(map[string]any, 4) }}

// nowText formats `now` (RFC 3339, second precision) once per second rather than once per call.
type nowText struct {
	now  func() time.Time
	last atomic.Pointer[stamp]
}

type stamp struct {
	unix int64
	text string
}

func (n *nowText) text() string {
	t := n.now().UTC()
	if s := n.last.Load(); s != nil && s.unix == t.Unix() {
		return s.text
	}
	s := &stamp{unix: t.Unix(), text: t.Format(time.RFC3339)}
	n.last.Store(s)
	return s.text
}

// Invoke evaluates the expression with `input` = the call's resolved arguments (SPEC §7.2). An evaluation error
// (a missing key, the cost limit) is a recoverable tool_error, and building or yielding more than the size limit
// a recoverable result_too_large; a mount call without a mount is a configuration
// error, unrecoverable (SPEC §7.1).
func (in *instance) Invoke(ctx context.Context, a runtime.Action, call *runtime.Call) (*runtime.Result, error) {
	act, ok := a.(*Action)
	if !ok {
		return nil, runtime.Unrecoverable(fmt.Errorf("cel: action of type %T", a))
	}
	input := call.Args
	if input == nil {
		input = map[string]any{}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The variables map never escapes the evaluation (results are fresh JSON values), so it is reused.
	vars := varsPool.Get().(map[string]any)
	defer varsPool.Put(vars)
	vars["context"], vars["input"], vars["runtime"], vars["now"] = in.context, input, in.runtime, in.clock.text()
	evalCtx := ctx
	if in.mount == nil { // with a mount, ctx also bounds its reads and writes
		evalCtx = evalContext(ctx)
	}
	out, err := act.Program.EvalWith(evalCtx, vars, in.mount)
	switch {
	case err == nil:
		return &runtime.Result{Output: out}, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, celenv.ErrNoMount):
		return nil, runtime.Unrecoverable(err)
	case errors.Is(err, celenv.ErrSizeLimit):
		return runtime.Fail(runtime.Errorf(runtime.KindResultTooLarge, "%v", err)), nil
	}
	return runtime.Fail(runtime.Errorf(runtime.KindToolError, "%v", err)), nil
}

// evalContext returns the context the evaluation watches. The cost limit already bounds a cel action, and
// cel-go's interruptible evaluation costs more than the expression itself for a typical action, so only a
// deadline (the host's per-action timeout) makes the evaluation watch ctx; a plain cancellation is seen before
// the evaluation starts and after it ends.
func evalContext(ctx context.Context) context.Context {
	if _, ok := ctx.Deadline(); ok {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

// Teardown does nothing: a cel action holds no resources.
func (*instance) Teardown(context.Context) error { return nil }

var (
	_ runtime.Runtime   = Backend{}
	_ runtime.Instance  = (*instance)(nil)
	_ runtime.Describer = (*Action)(nil)
)
