package mcp_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"testing"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/mcpauth"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkCall compares Task.Invoke of an mcp action with a raw mcp-go CallTool of the same tool on the same
// server program, in the same run: over stdio (one process each) and streamable HTTP (one server process for both).
// The raw client speaks the same protocol revision as the backend (the handshake protocol).
// inherited returns the manifest env lines that pass this process's value of each named variable that is set to
// the server, as the raw client's server inherits the whole environment: under scripts/instructions.sh both
// servers then run on one thread, so that their instructions compare.
func inherited(names ...string) []string {
	var lines []string
	for _, name := range names {
		if v, ok := os.LookupEnv(name); ok {
			lines = append(lines, fmt.Sprintf("%s: %q", name, v))
		}
	}
	return lines
}

func BenchmarkCall(b *testing.B) {
	httpURL, _ := remoteServer(b, "-http")
	servers := []struct {
		name  string
		block string
		raw   func() transport.Interface
	}{
		{"stdio", stdioServer(inherited("GOMAXPROCS", "GODEBUG")...), func() transport.Interface { return transport.NewStdio(serverBin, nil) }},
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
			b.ReportAllocs()
			b.ResetTimer()
			seq := 0
			for b.Loop() {
				// A progress token must be unique among the requests in flight (MCP's progress utility): numbered,
				// as the task numbers its calls.
				seq++
				req.Params.Meta = &mcp.Meta{ProgressToken: "call_" + strconv.Itoa(seq)}
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

// staticToken is an Authorizer that holds one token, as one with a valid token in memory does.
type staticToken string

func (s staticToken) Token(context.Context, mcpauth.Server) (string, error) { return string(s), nil }
func (staticToken) Challenge(context.Context, mcpauth.Server, mcpauth.Challenge) error {
	return mcpauth.ErrAuthorizationRequired
}

// BenchmarkAuthorizedCall compares a call whose bearer comes from the task's Authorizer with one whose
// Authorization header the manifest renders from an AuthProvider, on the same streamable HTTP server, in the same
// run (issue 37's bound: the Authorizer costs at most 1.05× the static header).
func BenchmarkAuthorizedCall(b *testing.B) {
	httpURL, _ := remoteServer(b, "-http")
	block := "  transport: streamable_http\n  url: " + httpURL + "\n"
	provider := authFunc(func(context.Context, string, tool.AuthRequest) (string, error) { return "tok-bench", nil })
	cases := []struct {
		name  string
		block string
		cfg   tool.TaskConfig
	}{
		{"header", block + "  headers:\n    Authorization: \"Bearer {auth.bench()}\"\n", tool.TaskConfig{}},
		{"authorizer", block, tool.TaskConfig{Subject: "user", MCPAuthorizer: staticToken("tok-bench")}},
	}
	ctx := context.Background()
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			task, err := load(b, manifest(c.block, "echo"), tool.WithAuth(provider),
				tool.WithLogger(slog.New(slog.DiscardHandler))).NewTask(ctx, c.cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = task.Close(ctx) }()
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
