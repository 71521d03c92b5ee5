package mcpserve_test

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/mcpserve"
	"github.com/commonagents-go/tool/tooltest"
	mcpclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// parallel is how many calls the concurrency tests make at once: more than mcp-go's default of 5 stdio workers.
const parallel = 8

// barrierServer starts a Server of testdata/ok/pages.yaml (a read-only, concurrency-safe GET) whose backend answers only once parallel requests are in flight.
func barrierServer(t *testing.T, ctx context.Context) (*mcpserve.Server, *tooltest.Barrier) {
	t.Helper()
	barrier := &tooltest.Barrier{N: parallel, Body: `{"text":"together"}`}
	backend := httptest.NewServer(barrier)
	t.Cleanup(backend.Close)
	tl, err := tool.LoadFile(ctx, "../testdata/ok/pages.yaml", tool.WithSettings(map[string]any{"base_url": backend.URL}))
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(t, ctx, tl)
	return s, barrier
}

// callTogether makes parallel calls of the pages function through c at once and fails t unless every one succeeds, which
// it does only if all of them reach the backend together.
func callTogether(t *testing.T, ctx context.Context, c *mcpclient.Client) {
	t.Helper()
	initialize(t, ctx, c)
	var wg sync.WaitGroup
	for range parallel {
		wg.Go(func() {
			req := mcpgo.CallToolRequest{}
			req.Params.Name = "pages"
			res, err := c.CallTool(ctx, req)
			if err != nil {
				t.Errorf("call: %v (a call that never ran with %d others in flight times out)", err, parallel-1)
				return
			}
			if text := res.Content[0].(mcpgo.TextContent).Text; res.IsError || text != "together" {
				t.Errorf("call: %+v", res)
			}
		})
	}
	wg.Wait()
}

// TestStdioRunsParallelCallsTogether: over stdio, read-only concurrency-safe calls from parallel callers all run
// at once, more of them than mcp-go's default worker pool of 5.
func TestStdioRunsParallelCallsTogether(t *testing.T) {
	tooltest.NoLeaks(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, _ := barrierServer(t, ctx)
	c, stop := overPipes(ctx, s)
	callTogether(t, ctx, c)
	if err := stop(); err != nil {
		t.Errorf("ServeStdio: %v", err)
	}
}

// TestStdioWorkersOption: a host that sizes the pool below its callers' parallelism gets that many calls at once;
// the barrier then never fills, and the calls end with the callers' context.
func TestStdioWorkersOption(t *testing.T) {
	tooltest.NoLeaks(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, barrier := barrierServer(t, ctx)
	c, stop := overPipes(ctx, s, server.WithWorkerPoolSize(parallel-1))
	initialize(t, ctx, c)
	errs := make(chan error, parallel)
	for range parallel {
		go func() {
			req := mcpgo.CallToolRequest{}
			req.Params.Name = "pages"
			_, err := c.CallTool(ctx, req)
			errs <- err
		}()
	}
	// The pool is full once parallel-1 requests are at the backend; the last call waits in the queue.
	if err := barrier.Await(ctx, parallel-1); err != nil {
		t.Fatalf("%d calls never reached the backend together: %v", parallel-1, err)
	}
	cancel()
	_ = stop() // ctx ended: ServeStdio returns its error; a call still being written ends too
	for range parallel {
		if err := <-errs; err == nil {
			t.Error("a call completed although the barrier never filled")
		}
	}
	if most := barrier.MostInFlight(); most != parallel-1 {
		t.Errorf("%d requests were at the backend at once with %d workers", most, parallel-1)
	}
}

// TestStreamableHTTPRunsParallelCallsTogether: the same over streamable HTTP.
func TestStreamableHTTPRunsParallelCallsTogether(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, _ := barrierServer(t, ctx)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	c, err := mcpclient.NewStreamableHttpClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	callTogether(t, ctx, c)
}
