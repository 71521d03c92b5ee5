package tool_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/runtime"
)

// lostReplyManifest has a POST (not idempotent), a PUT (idempotent by its method) and an annotated POST against
// base, each with the given timeout.
const lostReplyManifest = `kind: commonagents.info/v1beta2/tool
namespace: tests
name: lostreply
description: Calls a server that loses replies.
stateless_http:
  timeout: 20s
actions:
  - name: create
    description: Creates an item.
    execute:
      stateless_http: {method: POST, url: "{settings.base_url}/items"}
  - name: replace
    description: Replaces an item.
    execute:
      stateless_http: {method: PUT, url: "{settings.base_url}/items/1"}
  - name: create_keyed
    description: Creates an item under an idempotency key.
    annotations: {idempotent: true}
    execute:
      stateless_http: {method: POST, url: "{settings.base_url}/items"}
`

// TestLostHTTPReplyOutcomeUnknown: a reply lost after the server ran the request is a recoverable unavailable
// error saying the outcome is unknown; it is retryable only for an idempotent action, and nothing is sent twice.
func TestLostHTTPReplyOutcomeUnknown(t *testing.T) {
	t.Parallel()
	var runs atomic.Int32
	task := lostReplyTask(t, func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1) // the server acted on the request
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			_ = conn.Close()
		}
	})
	for _, c := range []struct {
		action    string
		retryable bool
	}{{"create", false}, {"replace", true}, {"create_keyed", true}} {
		before := runs.Load()
		res, err := task.Invoke(context.Background(), c.action, nil)
		if err != nil {
			t.Fatalf("%s: a lost reply ended the task: %v", c.action, err)
		}
		if n := runs.Load() - before; n != 1 {
			t.Errorf("%s: the server got the request %d times, want once", c.action, n)
		}
		e := res.Error
		if e == nil || e.Kind != runtime.KindUnavailable || !e.OutcomeUnknown || e.Retryable != c.retryable ||
			!strings.Contains(e.Message, "outcome is unknown") {
			t.Errorf("%s: error %+v, want unavailable with the outcome unknown, retryable %t", c.action, e, c.retryable)
			continue
		}
		if hinted := e.Hint != nil && strings.Contains(e.Hint.Message, "check the state"); hinted == c.retryable {
			t.Errorf("%s: hint %+v, want one to check the state only when not retryable", c.action, e.Hint)
		}
	}
}

// TestCutShortHTTPReplyOutcomeUnknown: a reply whose body ends before its announced length (the connection broke
// mid-body) is lost too, never taken for the whole body.
func TestCutShortHTTPReplyOutcomeUnknown(t *testing.T) {
	t.Parallel()
	task := lostReplyTask(t, func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"id\": 1}")
		_ = buf.Flush()
	})
	res, err := task.Invoke(context.Background(), "replace", nil)
	if err != nil {
		t.Fatal(err)
	}
	if e := res.Error; e == nil || e.Kind != runtime.KindUnavailable || !e.OutcomeUnknown {
		t.Errorf("result %+v (error %+v), want unavailable with the outcome unknown", res.Output, res.Error)
	}
}

// lostReplyTask is a task of lostReplyManifest whose server is handler.
func lostReplyTask(t *testing.T, handler http.HandlerFunc) *tool.Task {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	tl, err := tool.Load(context.Background(), []byte(lostReplyManifest),
		tool.WithSettings(map[string]any{"base_url": srv.URL}))
	if err != nil {
		t.Fatal(err)
	}
	task, err := tl.NewTask(context.Background(), tool.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = task.Close(context.Background()) })
	return task
}
