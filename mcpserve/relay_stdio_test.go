package mcpserve_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/mcpserve"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStdioRelayPassesRequestsAsTheyCame: served over stdio, the gateway passes an upstream's sampling, form and URL
// elicitations and roots/list to its client as they came, and the answers back as the client gave them, as over
// streamable HTTP.
func TestStdioRelayPassesRequestsAsTheyCame(t *testing.T) {
	t.Parallel()
	relayPasses(t, func(up *relayUpstream, opts *mcp.ClientOptions, roots ...*mcp.Root) (*mcp.ClientSession, func(string) string) {
		return stdioRelayClient(t, up.url, opts, roots...)
	})
}

// stdioRelayClient serves every tool of the upstream at url over stdio (pipes), its task given a StdioRelay, and
// connects a go-sdk client with opts to it; the func returns the function name an upstream tool is served under.
func stdioRelayClient(t *testing.T, url string, opts *mcp.ClientOptions, roots ...*mcp.Root) (*mcp.ClientSession,
	func(string) string) {
	t.Helper()
	ctx := context.Background()
	tl, err := tool.Load(ctx, []byte(`kind: commonagents.info/v1beta2/tool
namespace: tests
name: gw
description: A gateway.
mcp:
  transport: streamable_http
  url: `+url+"\n"), tool.WithDiscovery(true))
	if err != nil {
		t.Fatal(err)
	}
	relay := mcpserve.NewStdioRelay()
	task, err := tl.NewTask(ctx, tool.TaskConfig{MCPRelay: relay})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- mcpserve.ForStdioTask(task, tool.Capability{}, relay).ServeStdio(ctx, inR, outW)
		_ = outW.Close()
	}()
	c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, opts)
	c.AddRoots(roots...)
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		_ = inW.Close()
		if err := <-served; err != nil && !errors.Is(err, io.ErrClosedPipe) {
			t.Errorf("ServeStdio: %v", err)
		}
		if err := task.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	names := map[string]string{}
	for _, f := range task.Functions() {
		names[f.Action] = f.Name
	}
	return cs, func(action string) string { return names[action] }
}
