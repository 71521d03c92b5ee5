package mcpserve_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	mcpclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// burstUpstream is an MCP server whose tool "burst" sends three progress notifications and three log messages and
// answers at once, all on the call's own stream, ahead of the result by construction: its event store makes
// mcp-go drain them before the result (without one, a notification mcp-go's forwarder holds as the result goes out is
// dropped), and it offers no listening stream (405 to GET), which would otherwise take some of them.
func burstUpstream(t *testing.T) string {
	t.Helper()
	s := server.NewMCPServer("burst", "1.0.0", server.WithToolCapabilities(false), server.WithLogging())
	s.AddTool(mcpgo.NewToolWithRawSchema("burst", "Reports three steps at once.", []byte(`{"type":"object"}`)),
		func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			sendSteps(ctx, req, "burst", "step %d")
			return mcpgo.NewToolResultText("done"), nil
		})
	h := server.NewStreamableHTTPServer(s, server.WithEventStore(server.NewInMemoryEventStore()))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			http.Error(w, "no listening stream", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// TestGatewayNotificationsPrecedeTheResult: the progress and log messages an upstream sends before its result reach
// the gateway's client before the result, all of them, over stdio, over streamable HTTP and with a task per
// session. mcp-go writes a server's queued notifications on a goroutine of its own, so the gateway writes them into
// the result's stream itself; ten calls in a row, with nothing between the last notification and the result.
func TestGatewayNotificationsPrecedeTheResult(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel) // after the parallel subtests
	src := `kind: commonagents.info/v1beta2/tool
namespace: tests
name: gw
description: A gateway.
mcp:
  transport: streamable_http
  url: ` + burstUpstream(t) + "\n"
	tl, err := tool.Load(ctx, []byte(src), tool.WithDiscovery(true))
	if err != nil {
		t.Fatal(err)
	}
	for _, transport := range transports {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, ctx, tl)
			c := mcpGoClient(t, ctx, s, tl, transport)
			assertNotificationsFirst(t, ctx, c)
		})
	}
}

// assertNotificationsFirst calls gw (the upstream's burst) ten times on c and fails unless each call's three progress notifications
// and three log messages have reached c when its result does.
func assertNotificationsFirst(t *testing.T, ctx context.Context, c *mcpclient.Client) {
	t.Helper()
	lreq := mcpgo.SetLevelRequest{}
	lreq.Params.Level = mcpgo.LoggingLevelDebug
	if err := c.SetLevel(ctx, lreq); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	c.OnNotification(func(n mcpgo.JSONRPCNotification) {
		mu.Lock()
		defer mu.Unlock()
		p := n.Params.AdditionalFields
		switch n.Method {
		case string(mcpgo.MethodNotificationProgress):
			seen = append(seen, fmt.Sprint(p["progressToken"], " ", p["progress"]))
		case string(mcpgo.MethodNotificationMessage):
			seen = append(seen, fmt.Sprint(p["data"]))
		}
	})
	for call := range 10 {
		mu.Lock()
		seen = nil
		mu.Unlock()
		token := fmt.Sprintf("tok-%d", call)
		req := mcpgo.CallToolRequest{}
		req.Params.Name = "gw" // the function of a tool with one action is named for the tool
		req.Params.Meta = &mcpgo.Meta{ProgressToken: token}
		res, err := c.CallTool(ctx, req)
		if err != nil || res.IsError {
			t.Fatalf("gw: %v %+v", err, res)
		}
		mu.Lock()
		got := slices.Clone(seen)
		mu.Unlock()
		want := []string{token + " 1", "step 1", token + " 2", "step 2", token + " 3", "step 3"}
		if !slices.Equal(got, want) {
			t.Fatalf("call %d: when the result came the client had seen %q, want %q", call, got, want)
		}
	}
}
