package main

import (
	"context"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// changingUpstream serves a tool "grow" that adds the tools "extra" and "_bad" (a name no action may have) to its
// list, which tells its sessions (notifications/tools/list_changed), then answers once seen is closed: the call
// runs while the gateway's list changes.
func changingUpstream(t *testing.T, seen <-chan struct{}) string {
	t.Helper()
	s := server.NewMCPServer("changing", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcpgo.NewTool("grow", mcpgo.WithDescription("Adds tools.")),
		func(ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			answer := func(text string) server.ToolHandlerFunc {
				return func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
					return mcpgo.NewToolResultText(text), nil
				}
			}
			s.AddTools(server.ServerTool{Tool: mcpgo.NewTool("extra", mcpgo.WithDescription("New.")), Handler: answer("extra ran")},
				server.ServerTool{Tool: mcpgo.NewTool("_bad", mcpgo.WithDescription("Badly named.")), Handler: answer("bad ran")})
			select {
			case <-seen:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return mcpgo.NewToolResultText("grown"), nil
		})
	hs := &http.Server{Handler: server.NewStreamableHTTPServer(s)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String() + "/mcp"
}

// TestServeMCPPassesListChangedOn: an upstream's tools/list_changed makes the gateway discover its tools again:
// its client is told (notifications/tools/list_changed), its next tools/list has the new tool and not the one
// the load checks refuse, the new tool can be called, and the call that was running finishes on its old
// definition.
func TestServeMCPPassesListChangedOn(t *testing.T) {
	t.Parallel()
	seen := make(chan struct{})
	gw := serveMCPHTTP(t, writeFile(t, "gw.yaml", gatewayManifest(changingUpstream(t, seen))), nil,
		"--discover", "--action-names")
	changed := make(chan struct{}, 4)
	c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw.url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()
	names := func() []string {
		list, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range list.Tools {
			out = append(out, tl.Name)
		}
		slices.Sort(out)
		return out
	}
	if got := names(); !slices.Equal(got, []string{"grow"}) {
		t.Fatalf("tools before: %v, want [grow]", got)
	}
	grown := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "grow", Arguments: map[string]any{}})
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
		}
		grown <- res
	}()
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatalf("no notifications/tools/list_changed reached the client; serve-mcp said:\n%s", gw.log())
	}
	close(seen)
	if res := <-grown; res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "grown" {
		t.Errorf("the call running during the change: %+v", res)
	}
	if got := names(); !slices.Equal(got, []string{"extra", "grow"}) {
		t.Errorf("tools after: %v, want [extra grow] (_bad left out by the load checks)", got)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "extra", Arguments: map[string]any{}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "extra ran" {
		t.Errorf("extra: %v %+v", err, res)
	}
}
