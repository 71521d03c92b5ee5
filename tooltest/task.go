package tooltest

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/internal/leakcheck"
)

// Load loads manifest, failing t with every problem when it does not load.
func Load(t testing.TB, manifest string, opts ...tool.Option) *tool.Tool {
	t.Helper()
	tl, err := tool.Load(context.Background(), []byte(manifest), opts...)
	if err != nil {
		t.Fatalf("tooltest: load: %v", err)
	}
	return tl
}

// NewTask starts a task of tl, failing t when it cannot start, and closes it when the test ends (failing t
// when Close fails).
func NewTask(t testing.TB, tl *tool.Tool, cfg tool.TaskConfig) *tool.Task {
	t.Helper()
	task, err := tl.NewTask(context.Background(), cfg)
	if err != nil {
		t.Fatalf("tooltest: new task: %v", err)
	}
	t.Cleanup(func() {
		if err := task.Close(context.Background()); err != nil {
			t.Errorf("tooltest: close task: %v", err)
		}
	})
	return task
}

// NoLeaks fails t when goroutines started after this call are still running shortly after the test and its
// cleanups ended — call it first, so that it checks after NewTask's Close. Tests using it must not run in
// parallel with tests that leave goroutines of their own.
func NoLeaks(t testing.TB) {
	t.Helper()
	leakcheck.Check(t)
}

func httptestRequest(url string, body []byte) *http.Request {
	return httptest.NewRequest(http.MethodPost, url, bytes.NewReader(body))
}
