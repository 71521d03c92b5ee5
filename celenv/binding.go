package celenv

import (
	"context"
	"errors"
)

// EvalBinding evaluates an agent binding value that is not a template (SPEC §3.3): src is compiled as CEL in
// ScopeBinding with default limits and evaluated with vars (`context`, `runtime`, optionally `now`); if src does
// not compile (`octocat`, `my-repo`, `hello world`), the binding is the literal text src. Template detection is
// the caller's job. Evaluation errors are returned as by Program.Eval. It compiles on every call: bindings are
// resolved once per task, not per call.
func EvalBinding(ctx context.Context, src string, vars map[string]any) (any, error) {
	p, err := Compile(ScopeBinding, src, Limits{})
	if err != nil {
		if _, ok := errors.AsType[*CompileError](err); ok {
			return src, nil
		}
		return nil, err
	}
	return p.Eval(ctx, vars)
}
