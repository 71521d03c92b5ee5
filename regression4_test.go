package tool_test

import (
	"context"
	"testing"

	tool "github.com/commonagents-go/tool"
)

// Regression: Close with an ended ctx skips Teardown of an already-initialized instance about half the time (select
// between in.done and ctx.Done picks at random), and reports "calls still running" with no call running.
func TestRegressionCloseEndedCtxSkipsTeardown(t *testing.T) {
	p := &probe{}
	tl := loadProbe(t, p)
	const n = 200
	spurious := 0
	for i := 0; i < n; i++ {
		task, _ := tl.NewTask(context.Background(), tool.TaskConfig{})
		mustInvoke(t, task, "read", nil)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := task.Close(ctx); err != nil {
			spurious++
		}
	}
	if got := p.teardowns.Load(); got != n {
		t.Errorf("%d successful Initializes, %d Teardowns; %d Close errors", p.inits.Load(), got, spurious)
	}
}
