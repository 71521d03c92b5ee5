package tool_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	tool "github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/runtime"
)

// boundedManifest has stateless_http actions, whose backend states the bound of its calls (the task then makes one
// context per call, with that bound): one shared (read-only) and one exclusive, both on a server that waits.
const boundedManifest = `kind: commonagents.info/v1beta2/tool
namespace: tests
name: bounded
description: Calls a server that waits.
actions:
  - name: slow_read
    description: Reads slowly.
    annotations: {read_only: true, concurrency_safe: true}
    parameters: {properties: {}}
    execute:
      stateless_http: {method: GET, url: "{settings.base}/wait", timeout: 200ms}
  - name: slow_write
    description: Writes slowly.
    parameters: {properties: {}}
    execute:
      stateless_http: {method: POST, url: "{settings.base}/wait"}
`

// TestBoundedCalls: a call on a backend that states its bound times out as that backend says (a recoverable
// timeout whose outcome is unknown), and Close ends a call in flight and a call waiting behind another with
// ErrClosed, never an unrecoverable error.
func TestBoundedCalls(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{}, 8)
	release := make(chan struct{})
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	ctx := context.Background()
	started := make(chan string, 8)
	obs := tool.ObserverFunc(func(_ context.Context, f tool.Fact) {
		if f.Name == facts.ToolStarted {
			started <- f.CallID
		}
	})
	tl, err := tool.Load(ctx, []byte(boundedManifest), tool.WithSettings(map[string]any{"base": srv.URL}),
		tool.WithObserver(obs))
	if err != nil {
		t.Fatal(err)
	}

	task, err := tl.NewTask(ctx, tool.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := task.Invoke(ctx, "slow_read", nil)
	if err != nil || res.Error == nil || res.Error.Kind != runtime.KindTimeout || !strings.Contains(res.Error.Message, "outcome is unknown") {
		t.Fatalf("slow_read: %v %+v, want a timeout whose outcome is unknown", err, res)
	}
	if d := res.Telemetry.Duration; d < 200*time.Millisecond || d > 20*time.Second {
		t.Errorf("slow_read took %v: the action's 200ms bound, not the 30s default, must end it", d)
	}
	<-arrived
	<-started

	// One exclusive call in flight at the server, a second one waiting for the gate: Close ends both.
	errs := make(chan error, 2)
	go func() { _, err := task.Invoke(ctx, "slow_write", nil); errs <- err }()
	<-arrived
	go func() { _, err := task.Invoke(ctx, "slow_write", nil); errs <- err }()
	<-started
	<-started // both calls are past their start: the second waits for the first (or is about to)
	if err := task.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-errs; !errors.Is(err, tool.ErrClosed) || errors.Is(err, tool.ErrUnrecoverable) {
			t.Errorf("a call ended by Close returned %v, want ErrClosed", err)
		}
	}
	if n := len(srv.requests()); n != 2 {
		t.Errorf("the server saw %d requests, want 2: the call waiting for the gate is never sent", n)
	}
}
