package celenv

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
)

// Limits bound an expression at load and at run time (SPEC §12.5). Zero fields take their defaults.
type Limits struct {
	// Cost is the evaluation cost limit; default DefaultCost.
	Cost uint64
	// MaxLength is the longest accepted expression, in bytes; default DefaultMaxLength, at most MaxLength.
	MaxLength int
	// Size bounds, in bytes, what one evaluation builds and what it yields; default DefaultSize. Every string
	// and bytes value a call returns counts its length, every list element or map entry a call or literal
	// returns counts 16 bytes (32 for an entry), all added up over the evaluation; the result counts its size
	// as JSON. Going over is an *EvalError wrapping ErrSizeLimit. The variables' own values do not count.
	Size int64
}

func (l Limits) withDefaults() Limits {
	if l.Cost == 0 {
		l.Cost = DefaultCost
	}
	if l.Size <= 0 {
		l.Size = DefaultSize
	}
	if l.MaxLength <= 0 {
		l.MaxLength = DefaultMaxLength
	}
	l.MaxLength = min(l.MaxLength, MaxLength)
	return l
}

// Program is a compiled, type-checked expression. It is immutable and safe for concurrent use.
type Program struct {
	scope     Scope
	src       string
	ast       *cel.Ast
	prg       cel.Program
	params    []string
	dynParams bool
	lim       Limits
	guards    []guard // FalseFor's

	// Equality conjuncts cost a recompilation each, and only routing needs them: they are built on first use.
	conjOnce  sync.Once
	conjuncts []Conjunct
}

// Compile parses, type-checks and plans expr for scope s. A filter must yield a bool and a detect expression a
// list, or a dynamic value (`event.payload.ok`) whose type the caller checks at run time. Problems with the
// expression are returned as a *CompileError; any other error means the scope's environment could not be built.
// The program keeps lim.Cost; equality conjuncts are compiled on first use of EqualityConjuncts.
func Compile(s Scope, expr string, lim Limits) (*Program, error) {
	lim = lim.withDefaults()
	if len(expr) > lim.MaxLength {
		return nil, &CompileError{Issues: fmt.Sprintf("expression is %d bytes long, more than the limit of %d", len(expr), lim.MaxLength)}
	}
	p, err := compile(s, expr, lim)
	if err != nil {
		return nil, err
	}
	if want := wantResult(s); want != nil {
		if got := p.ast.OutputType(); got.Kind() != types.DynKind && got.Kind() != want.Kind() {
			return nil, &CompileError{Issues: fmt.Sprintf("a %s expression must yield %s, not %s", s, want, got)}
		}
	}
	return p, nil
}

func compile(s Scope, expr string, lim Limits) (*Program, error) {
	env, err := Env(s)
	if err != nil {
		return nil, err
	}
	checked, iss := env.Compile(expr)
	if err := iss.Err(); err != nil {
		return nil, &CompileError{Issues: err.Error()}
	}
	prg, err := env.Program(checked,
		cel.CostLimit(lim.Cost),
		cel.InterruptCheckFrequency(interruptEvery),
		cel.CustomDecoratorV2(sizeDecorator),
		cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, &CompileError{Issues: err.Error()}
	}
	p := &Program{scope: s, src: expr, ast: checked, prg: prg, lim: lim}
	p.params, p.dynParams = parameterRefs(checked.NativeRep().Expr())
	if s == ScopeFilter {
		p.guards = guards(checked.NativeRep().Expr())
	}
	return p, nil
}

// wantResult is the type an expression of scope s must yield; nil for any.
func wantResult(s Scope) *cel.Type {
	switch s {
	case ScopeFilter:
		return cel.BoolType
	case ScopeDetect:
		return cel.ListType(cel.DynType)
	}
	return nil
}

// Source returns the expression text.
func (p *Program) Source() string { return p.src }

// Scope returns the scope the expression was compiled in.
func (p *Program) Scope() Scope { return p.scope }

// ParameterRefs returns the sorted distinct names X of every `parameters.X`, `parameters['X']`,
// `has(parameters.X)` and `parameters.?X` in the expression. The result is a fresh slice.
func (p *Program) ParameterRefs() []string { return slices.Clone(p.params) }

// DynamicParameterRefs reports whether the expression also uses `parameters` other than with a constant key
// (`parameters[k]`, `size(parameters)`, ...), in which case ParameterRefs does not name every parameter the
// expression may read.
func (p *Program) DynamicParameterRefs() bool { return p.dynParams }

// Eval evaluates the program without a mount; see EvalWith.
func (p *Program) Eval(ctx context.Context, vars map[string]any) (any, error) {
	return p.EvalWith(ctx, vars, nil)
}

// EvalWith evaluates the program with vars as its variables and m behind mount.read/mount.write (nil: no mount,
// and calling them fails with ErrNoMount). A variable absent from vars is an evaluation error when the expression
// reads it, except `now`, which defaults to the current UTC time as RFC 3339 text with second precision (callers
// with their own clock set it, in the same format), and the aliases `c` and `i`, which default to `context` and
// `input`. vars is read, never modified.
//
// ctx bounds the evaluation (checked every few comprehension iterations) and is passed to the mount.
// The result is a plain JSON value (see the package doc). Errors are *EvalError; errors.Is finds ErrCostLimit,
// ErrNotJSON, ErrNoMount, ErrMountPath, a mount's own errors, and ctx's error when ctx ended the evaluation.
func (p *Program) EvalWith(ctx context.Context, vars map[string]any, m Mount) (any, error) {
	out, err := p.eval(ctx, vars, m)
	if err != nil {
		return nil, err
	}
	v, err := (&converter{left: p.lim.Size}).toJSON(out)
	if err != nil {
		return nil, &EvalError{Message: err.Error(), err: err}
	}
	return v, nil
}

// EvalBool evaluates a program that must yield a bool, such as a filter. Errors are as for EvalWith; a result
// that is not a bool is an *EvalError.
func (p *Program) EvalBool(ctx context.Context, vars map[string]any) (bool, error) {
	out, err := p.eval(ctx, vars, nil)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, &EvalError{Message: fmt.Sprintf("expression yielded %s, want bool", out.Type().TypeName())}
	}
	return bool(b), nil
}

func (p *Program) eval(ctx context.Context, vars map[string]any, m Mount) (ref.Val, error) {
	act := &activation{vars: vars, ctx: ctx, mount: m, sizeLimit: p.lim.Size}
	var (
		out ref.Val
		err error
	)
	if ctx.Done() == nil {
		out, _, err = p.prg.Eval(act) // nothing to interrupt: skip setting up cancellation
	} else {
		out, _, err = p.prg.ContextEval(ctx, act)
	}
	if err != nil {
		return nil, p.evalError(err)
	}
	return out, nil
}

// activation resolves variables for one evaluation and supplies the late-bound mount functions.
// It is not shared between evaluations.
type activation struct {
	vars  map[string]any
	ctx   context.Context
	mount Mount
	now   string

	size, sizeLimit int64           // bytes built so far, and the limit (Limits.Size)
	grown           map[int64]int64 // accumulator sizes by node id
}

// ResolveName implements interpreter.Activation.
func (a *activation) ResolveName(name string) (any, bool) {
	if v, ok := a.vars[name]; ok {
		return v, true
	}
	switch name {
	case sizeKey:
		return a, true
	case "c":
		v, ok := a.vars["context"]
		return v, ok
	case "i":
		v, ok := a.vars["input"]
		return v, ok
	case "now":
		if a.now == "" {
			a.now = time.Now().UTC().Format(time.RFC3339)
		}
		return a.now, true
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (a *activation) Parent() interpreter.Activation { return nil }

func (p *Program) evalError(err error) *EvalError {
	var cancelled interpreter.EvalCancelledError
	if errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded {
		return &EvalError{Message: ErrCostLimit.Error(), err: ErrCostLimit}
	}
	if errors.As(err, &cancelled) && cancelled.Cause == sizeLimitExceeded {
		return &EvalError{Message: ErrSizeLimit.Error(), err: ErrSizeLimit}
	}
	e := &EvalError{Message: redact(err.Error(), p.src), err: err, missing: missingField(err.Error())}
	if beyondFloat64(err.Error()) {
		e.Message = "a JSON number beyond float64's range (kept as its text), which CEL cannot read as a number"
	}
	var celErr *types.Err
	if errors.As(err, &celErr) && celErr.NodeID() != 0 {
		loc := p.ast.NativeRep().SourceInfo().GetStartLocation(celErr.NodeID())
		if loc.Line() > 0 {
			e.Line, e.Column = loc.Line(), loc.Column()+1
		}
	}
	return e
}

var _ interpreter.FunctionActivation = (*activation)(nil)
