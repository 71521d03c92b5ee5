package tool_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/tooltest"
)

// connCounter starts a Barrier of n behind a server that counts the connections it accepts and closes.
type connCounter struct {
	srv            *httptest.Server
	opened, closed atomic.Int64
	allClosed      chan struct{} // signalled on every close; the test compares the counts
}

func newConnCounter(t *testing.T, n int) *connCounter {
	c := &connCounter{allClosed: make(chan struct{}, 1024)}
	c.srv = httptest.NewUnstartedServer(&tooltest.Barrier{N: n, Body: `{"text":"ok"}`})
	c.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			c.opened.Add(1)
		case http.StateClosed, http.StateHijacked:
			c.closed.Add(1)
			c.allClosed <- struct{}{}
		}
	}
	c.srv.Start()
	t.Cleanup(c.srv.Close)
	return c
}

// invokeAll runs n concurrent reads in task and fails t unless each succeeds.
func invokeAll(t *testing.T, ctx context.Context, task *tool.Task, n int) {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			res, err := task.Invoke(ctx, "read", nil)
			if err != nil || res.IsError {
				t.Errorf("read: %v %+v", err, res)
			}
		})
	}
	wg.Wait()
}

// TestDefaultHTTPClientPoolsForConcurrency: the default client keeps a connection per concurrent call, so rounds
// of 8 parallel calls reuse the first round's connections (net/http's default keeps 2 per host: each later round
// would open 6 more), and closing the Tool's last task closes them.
func TestDefaultHTTPClientPoolsForConcurrency(t *testing.T) {
	tooltest.NoLeaks(t)
	const parallel, rounds = 8, 4
	c := newConnCounter(t, parallel)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tl, err := tool.LoadFile(ctx, "testdata/ok/pages.yaml", tool.WithSettings(map[string]any{"base_url": c.srv.URL}))
	if err != nil {
		t.Fatal(err)
	}
	task, err := tl.NewTask(ctx, tool.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := tl.NewTask(ctx, tool.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for range rounds {
		invokeAll(t, ctx, task, parallel)
	}
	// A connection can be dialled while another is on its way back to the pool: allow one such race per round.
	if got := c.opened.Load(); got > parallel+rounds-1 {
		t.Errorf("%d rounds of %d parallel calls opened %d connections, want about %d", rounds, parallel, got, parallel)
	}
	if err := task.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.closed.Load(); got != 0 {
		t.Errorf("closing one of two tasks closed %d connections: the other task may still use them", got)
	}
	if err := other.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for c.closed.Load() < c.opened.Load() {
		select {
		case <-c.allClosed:
		case <-ctx.Done():
			t.Fatalf("after the last task closed, %d of %d connections are still open", c.opened.Load()-c.closed.Load(),
				c.opened.Load())
		}
	}
}

// closeCounter is a host's transport that counts CloseIdleConnections calls.
type closeCounter struct {
	http.RoundTripper
	closes atomic.Int64
}

func (c *closeCounter) CloseIdleConnections() { c.closes.Add(1) }

// TestHostHTTPClientIsLeftAlone: a client passed with WithHTTPClient is the host's: the tool uses it for its calls
// and never closes its connections.
func TestHostHTTPClientIsLeftAlone(t *testing.T) {
	c := newConnCounter(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rt := &closeCounter{RoundTripper: c.srv.Client().Transport}
	tl, err := tool.LoadFile(ctx, "testdata/ok/pages.yaml", tool.WithSettings(map[string]any{"base_url": c.srv.URL}),
		tool.WithHTTPClient(&http.Client{Transport: rt}))
	if err != nil {
		t.Fatal(err)
	}
	task, err := tl.NewTask(ctx, tool.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	invokeAll(t, ctx, task, 1)
	if err := task.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rt.closes.Load(); n != 0 {
		t.Errorf("the host's client had its idle connections closed %d times", n)
	}
	if c.opened.Load() != 1 {
		t.Errorf("the host's client opened %d connections, want 1", c.opened.Load())
	}
	c.srv.Client().CloseIdleConnections()
}
