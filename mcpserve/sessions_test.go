package mcpserve_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/mcpserve"
	"github.com/commonagents-go/tool/tooltest"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// whoManifest's action answers the task's context: which session's task ran the call.
const whoManifest = `kind: commonagents.info/v1beta2/tool
namespace: tests
name: who
description: Tells which task runs.
actions:
  - name: whoami
    description: Returns the task's number.
    parameters:
      properties: {}
    execute:
      cel:
        expression: "string(context.n)"
`

// sessionTasks serves whoManifest with a task per session, numbering the tasks it starts.
type sessionTasks struct {
	mu    sync.Mutex
	tasks []*tool.Task
}

func (st *sessionTasks) start(tl *tool.Tool) mcpserve.StartFunc {
	return func(ctx context.Context) (*tool.Task, error) {
		st.mu.Lock()
		defer st.mu.Unlock()
		task, err := tl.NewTask(ctx, tool.TaskConfig{Context: map[string]any{"n": len(st.tasks)}})
		if err == nil {
			st.tasks = append(st.tasks, task)
		}
		return task, err
	}
}

func (st *sessionTasks) task(n int) *tool.Task {
	st.mu.Lock()
	defer st.mu.Unlock()
	if n >= len(st.tasks) {
		return nil
	}
	return st.tasks[n]
}

func serveSessions(t *testing.T, cfg mcpserve.SessionConfig) (*sessionTasks, *mcpserve.SessionHandler, string) {
	t.Helper()
	tl, err := tool.Load(context.Background(), []byte(whoManifest))
	if err != nil {
		t.Fatal(err)
	}
	st := &sessionTasks{}
	h := mcpserve.Handler(tl, st.start(tl), cfg)
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		if err := h.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return st, h, srv.URL
}

func whoami(t *testing.T, c *mcpclient.Client) string {
	t.Helper()
	req := mcpgo.CallToolRequest{}
	req.Params.Name = "who"
	res, err := c.CallTool(context.Background(), req)
	if err != nil || res.IsError {
		t.Fatalf("who: %v %+v", err, res)
	}
	return res.Content[0].(mcpgo.TextContent).Text
}

// TestHandlerStartsATaskPerSession: each MCP session's calls run in a task of its own, and deleting the session
// closes it.
func TestHandlerStartsATaskPerSession(t *testing.T) {
	t.Parallel()
	st, h, url := serveSessions(t, mcpserve.SessionConfig{})
	a, err := connect(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := connect(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	ga, gb := whoami(t, a), whoami(t, b)
	if ga == gb || whoami(t, a) != ga || whoami(t, b) != gb {
		t.Errorf("sessions a and b ran in tasks %s and %s; want a task of their own each, kept", ga, gb)
	}
	if n := h.Sessions(); n != 2 {
		t.Errorf("%d live sessions, want 2", n)
	}
	_ = a.Close() // the client deletes its session
	if _, err := st.task(0).Invoke(context.Background(), "whoami", nil); !errors.Is(err, tool.ErrClosed) {
		t.Errorf("the deleted session's task is not closed: %v", err)
	}
	if whoami(t, b) != gb {
		t.Error("the other session lost its task")
	}
	_ = b.Close()
}

// TestHandlerBoundsSessions: at MaxSessions a new session gets 503 and the live one goes on.
func TestHandlerBoundsSessions(t *testing.T) {
	t.Parallel()
	_, _, url := serveSessions(t, mcpserve.SessionConfig{MaxSessions: 1})
	a, err := connect(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := connect(t, url, nil); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("a session over the bound: %v, want 503", err)
	}
	if whoami(t, a) != "0" {
		t.Error("the live session was disturbed")
	}
}

// TestHandlerBoundsSessionsPerOwner: at MaxSessionsPerOwner an owner's new session gets 429, while another owner's
// session is made and the live ones go on.
func TestHandlerBoundsSessionsPerOwner(t *testing.T) {
	t.Parallel()
	_, _, url := serveSessions(t, mcpserve.SessionConfig{MaxSessionsPerOwner: 2, Owner: func(r *http.Request) string {
		return r.Header.Get("Authorization")
	}})
	alice, bob := map[string]string{"Authorization": "Bearer alice"}, map[string]string{"Authorization": "Bearer bob"}
	for range 2 {
		c, err := connect(t, url, alice)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",` +
		`"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initialize))
	req.Header.Set("Authorization", "Bearer alice")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("alice's third session: %d, want 429 with Retry-After", resp.StatusCode)
	}
	c, err := connect(t, url, bob)
	if err != nil {
		t.Fatalf("bob's first session beside alice's two: %v", err)
	}
	defer c.Close()
}

// TestHandlerTiesASessionToItsOwner: a request of another owner (another bearer token) does not reach a session.
func TestHandlerTiesASessionToItsOwner(t *testing.T) {
	t.Parallel()
	var sessionID string
	_, _, url := serveSessions(t, mcpserve.SessionConfig{Owner: func(r *http.Request) string {
		return r.Header.Get("Authorization")
	}})
	c, err := mcpclient.NewStreamableHttpClient(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer a"}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	initialize(t, context.Background(), c)
	sessionID = c.GetSessionId()
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(method, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Authorization", "Bearer b")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sessionID)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s with another token: %d, want 404", method, resp.StatusCode)
		}
	}
	if whoami(t, c) != "0" {
		t.Error("the owner's session was disturbed")
	}
}

// TestHandlerEndsIdleSessions: a session idle for IdleTimeout is ended and its task closed; a busy one is kept.
func TestHandlerEndsIdleSessions(t *testing.T) {
	t.Parallel()
	clock := tooltest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	st, h, url := serveSessions(t, mcpserve.SessionConfig{IdleTimeout: time.Minute, Clock: clock})
	c, err := connect(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	whoami(t, c)
	clock.BlockUntil(t, 1) // the reaper waits
	clock.Advance(30 * time.Second)
	clock.BlockUntil(t, 1)
	if n := h.Sessions(); n != 1 {
		t.Fatalf("a session idle for half its timeout was ended (%d live)", n)
	}
	clock.Advance(45 * time.Second)
	clock.BlockUntil(t, 1) // the reaper arms its next check once it has ended the idle sessions
	if n := h.Sessions(); n != 0 {
		t.Fatalf("the idle session was not ended (%d live)", n)
	}
	if _, err := st.task(0).Invoke(context.Background(), "whoami", nil); !errors.Is(err, tool.ErrClosed) {
		t.Errorf("the idle session's task is not closed: %v", err)
	}
	req := mcpgo.CallToolRequest{}
	req.Params.Name = "who"
	if _, err := c.CallTool(context.Background(), req); err == nil {
		t.Error("a call on the ended session succeeded")
	}
}
