package tool_test

import (
	"context"
	"testing"
	"time"

	tool "github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/runtime"
)

type panicInit struct{ probe }

func (p *panicInit) Initialize(context.Context, *runtime.Init) (runtime.Instance, error) {
	panic("backend bug")
}

// Regression: a panic in Initialize (recovered by the host, as net/http does) leaves in.done open: later calls of that
// backend hang until their ctx ends and Close(context.Background()) never returns.
func TestRegressionInitPanicHangsClose(t *testing.T) {
	p := &panicInit{}
	reg := runtime.Default().Clone()
	if err := reg.Register(p); err != nil {
		t.Fatal(err)
	}
	tl := mustLoadSrc(t, probeManifest, tool.WithRuntimes(reg))
	task, _ := tl.NewTask(context.Background(), tool.TaskConfig{})
	func() {
		defer func() { recover() }()
		task.Invoke(context.Background(), "read", nil)
	}()
	done := make(chan error, 1)
	go func() { done <- task.Close(context.Background()) }()
	select {
	case err := <-done:
		t.Logf("Close: %v", err)
	case <-time.After(2 * time.Second):
		t.Errorf("Close(context.Background()) hangs after a panicking Initialize")
	}
}
