package tool_test

import (
	"context"
	"net/http"
	"testing"

	tool "github.com/commonagents-go/tool"
)

// Regression: Close with a context that has already ended: the teardown gets a dead context (no DELETE is sent), and the
// session record that would let a resumed task destroy it is deleted anyway.
func TestRegressionCloseExpiredCtxLosesSession(t *testing.T) {
	srv := browserServer(t, http.StatusCreated)
	store := tool.NewMemoryStore()
	task, err := browserTool(t, srv, tool.WithStore(store)).NewTask(context.Background(), tool.TaskConfig{ID: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	mustInvoke(t, task, "read_text", nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	t.Logf("Close: %v", task.Close(ctx))
	deletes := 0
	for _, r := range srv.requests() {
		if r.Method == "DELETE" {
			deletes++
		}
	}
	keys, _ := store.List(context.Background(), "tasks/")
	if deletes == 0 && len(keys) == 0 {
		t.Errorf("no DELETE sent and the session record is gone: the session leaks for good")
	}
}
