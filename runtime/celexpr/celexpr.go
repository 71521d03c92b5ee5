// Package celexpr is the cel action backend (SPEC §7.2): the action's output is the value of a CEL expression over
// the task context and the call's input. Importing the root package registers it.
package celexpr

import (
	"context"

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

// Initialize is not built yet: execution arrives with the Tasks/Invoke work.
func (Backend) Initialize(context.Context, *runtime.Init) (runtime.Instance, error) {
	return nil, runtime.ErrNotImplemented
}

var (
	_ runtime.Runtime   = Backend{}
	_ runtime.Describer = (*Action)(nil)
)
