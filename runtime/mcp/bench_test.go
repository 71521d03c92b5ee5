package mcp_test

import (
	"context"
	"testing"

	"github.com/commonagents-go/tool"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkCall compares Task.Invoke of an mcp action with a raw mcp-go CallTool of the same tool on the same
// server program, in the same run: over stdio (one process each) and streamable HTTP (one server process for both).
// The raw client speaks the same protocol revision as the backend (the handshake protocol).
func BenchmarkCall(b *testing.B) {
	httpURL, _ := remoteServer(b, "-http")
	servers := []struct {
		name  string
		block string
		raw   func() transport.Interface
	}{
		{"stdio", stdioServer(), func() transport.Interface { return transport.NewStdio(serverBin, nil) }},
		{"streamable_http", "  transport: streamable_http\n  url: " + httpURL + "\n", func() transport.Interface {
			t, err := transport.NewStreamableHTTP(httpURL)
			if err != nil {
				b.Fatal(err)
			}
			return t
		}},
	}
	ctx := context.Background()
	for _, s := range servers {
		b.Run(s.name+"/raw", func(b *testing.B) {
			c := client.NewClient(s.raw(), client.WithLegacyProtocolOnly())
			if err := c.Start(ctx); err != nil {
				b.Fatal(err)
			}
			defer func() { _ = c.Close() }()
			if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
				b.Fatal(err)
			}
			req := mcp.CallToolRequest{}
			req.Params.Name = "echo"
			req.Params.Arguments = map[string]any{"text": "hello"}
			req.Params.Meta = &mcp.Meta{ProgressToken: "x"}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				res, err := c.CallTool(ctx, req)
				if err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
		})
		b.Run(s.name+"/invoke", func(b *testing.B) {
			// The server starts once, before the loop, so its containment costs no call: a process group, as the
			// raw client's, which also lets valgrind count instructions (it cannot run clone3 into a cgroup).
			task := newTask(b, load(b, manifest(s.block, "echo"), tool.WithCgroupParent("")))
			args := map[string]any{"text": "hello"}
			if _, err := task.Invoke(ctx, "echo", args); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				res, err := task.Invoke(ctx, "echo", args)
				if err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
		})
	}
}
