package mcpserve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/commonagents-go/tool"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// BenchmarkHTTPWrapper: calls of a cel action over streamable HTTP, 8 in flight, through mcp-go's server alone
// (raw) and through the wrapper that orders notifications and screens unknown tools (ordered), alternated in one
// process, so that the wrapper's own cost shows apart from the machine's noise.
func BenchmarkHTTPWrapper(b *testing.B) {
	ctx := context.Background()
	tl, err := tool.LoadFile(ctx, filepath.Join("..", "scripts", "shout.yaml")) // the manifest the serve-mcp scripts serve
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(ctx, tl, tool.TaskConfig{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Close(ctx) }()
	raw := server.NewStreamableHTTPServer(s.mcp)
	for _, h := range []struct {
		name string
		h    http.Handler
	}{{"raw", raw}, {"ordered", ordered(raw, s.tools, nil)}} {
		b.Run(h.name, func(b *testing.B) {
			srv := httptest.NewServer(h.h)
			defer srv.Close()
			c, err := mcpclient.NewStreamableHttpClient(srv.URL)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			if err := c.Start(ctx); err != nil {
				b.Fatal(err)
			}
			if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
				b.Fatal(err)
			}
			b.SetParallelism(4) // 8 callers on 2 cores
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				req := mcp.CallToolRequest{}
				req.Params.Name = "shout"
				req.Params.Arguments = map[string]any{"name": "ada"}
				for pb.Next() {
					if res, err := c.CallTool(ctx, req); err != nil || res.IsError {
						b.Fatalf("%v %+v", err, res)
					}
				}
			})
		})
	}
}
