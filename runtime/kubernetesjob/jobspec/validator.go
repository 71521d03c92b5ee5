package jobspec

import (
	"context"
	"errors"

	"github.com/commonagents-go/tool/runtime"
)

// Kind is the execute-block key of the kubernetes_job backend.
const Kind = "kubernetes_job"

// ErrValidateOnly is returned (wrapped, unrecoverable) by Validator.Initialize: the program checks kubernetes_job
// actions but does not run them.
var ErrValidateOnly = errors.New("kubernetes_job: this program checks kubernetes_job actions but cannot run them: " +
	"a host runs them with package runtime/kubernetesjob and a cluster client")

// Validator is a kubernetes_job backend that loads and fully checks kubernetes_job blocks, exactly as package
// kubernetesjob does, but runs nothing: a call fails as unrecoverable with ErrValidateOnly. A program that checks
// manifests without running Jobs registers it (runtime.Default().MustRegister(jobspec.Validator{})) instead of
// importing package kubernetesjob, and so links no client-go. It is safe for concurrent use.
type Validator struct{}

// Kind returns "kubernetes_job".
func (Validator) Kind() string { return Kind }

// Prepare checks an action's block (see Prepare).
func (Validator) Prepare(_ context.Context, blk *runtime.Block) (runtime.Action, error) {
	return Prepare(blk)
}

// ValidateShared checks the top-level block (see ValidateShared).
func (Validator) ValidateShared(_ context.Context, blk *runtime.Block) error {
	return ValidateShared(blk)
}

// Initialize fails with ErrValidateOnly, unrecoverable.
func (Validator) Initialize(context.Context, *runtime.Init) (runtime.Instance, error) {
	return nil, runtime.Unrecoverable(ErrValidateOnly)
}

var (
	_ runtime.Runtime         = Validator{}
	_ runtime.SharedValidator = Validator{}
	_ runtime.Describer       = (*Action)(nil)
)
