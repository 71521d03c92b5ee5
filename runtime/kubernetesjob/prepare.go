package kubernetesjob

import (
	"context"

	"github.com/commonagents-go/tool/runtime"
	"github.com/commonagents-go/tool/runtime/kubernetesjob/jobspec"
)

// Config is a kubernetes_job block, at action or top level; the action's fields win over the top-level ones.
type Config = jobspec.Config

// Action is a prepared kubernetes_job action.
type Action = jobspec.Action

// Prepare merges the action's block over the top-level one, checks the namespace, parses every string of the
// spec as a template and decodes the spec strictly as a batch/v1 JobSpec, with each token standing for text
// (jobspec.Prepare).
func (b *Backend) Prepare(_ context.Context, blk *runtime.Block) (runtime.Action, error) {
	return jobspec.Prepare(blk)
}

// ValidateShared decodes and checks the top-level kubernetes_job block once, whether or not an action uses it.
func (b *Backend) ValidateShared(_ context.Context, blk *runtime.Block) error {
	return jobspec.ValidateShared(blk)
}
