package mcp_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/runtime"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// askingServer serves a tool "ask" that requests a completion from its client and answers with it, or with
// "refused" when the client refuses.
func askingServer(t *testing.T) string {
	t.Helper()
	s := server.NewMCPServer("asking", "1.0.0", server.WithToolCapabilities(false))
	s.EnableSampling()
	s.AddTool(mcp.NewToolWithRawSchema("ask", "Asks the client's LLM.", []byte(`{"type":"object"}`)),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			req := mcp.CreateMessageRequest{}
			req.Messages = []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("say hi")}}
			req.MaxTokens = 10
			res, err := server.ServerFromContext(ctx).RequestSampling(ctx, req)
			if err != nil {
				return mcp.NewToolResultText("refused"), nil
			}
			text, _ := res.Content.(mcp.TextContent)
			return mcp.NewToolResultText("the LLM said " + text.Text), nil
		})
	srv := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(srv.Close)
	return "  transport: streamable_http\n  url: " + srv.URL + "/mcp\n"
}

// TestSamplingReachesTheHost: a server's sampling request during a call goes to the task's Sampler; without one it
// is refused (mcp-go's server asks even a client that offers no sampling) and the call goes on.
func TestSamplingReachesTheHost(t *testing.T) {
	t.Parallel()
	src := "kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: asking\ndescription: d\nmcp:\n" +
		askingServer(t) + "actions:\n  - name: ask\n    description: Asks.\n    parameters:\n      properties: {}\n" +
		"    execute:\n      mcp: {}\n"
	tl := load(t, src)
	var asked []tool.SampleRequest
	hi := tool.SamplerFunc(func(_ context.Context, req tool.SampleRequest) (tool.SampleResult, error) {
		asked = append(asked, req)
		return tool.SampleResult{Model: "test", Message: tool.SampleMessage{Role: "assistant",
			Content: runtime.Content{Type: runtime.ContentText, Text: "hi"}}}, nil
	})
	for _, tt := range []struct {
		name    string
		sampler tool.Sampler
		want    string
	}{{"with a sampler", hi, "the LLM said hi"}, {"without", nil, "refused"}} {
		task, err := tl.NewTask(context.Background(), tool.TaskConfig{Sampler: tt.sampler})
		if err != nil {
			t.Fatal(err)
		}
		res, err := task.Invoke(context.Background(), "ask", nil)
		_ = task.Close(context.Background())
		if err != nil || res.IsError || res.Output != tt.want {
			t.Errorf("%s: %v %+v, want %q", tt.name, err, res, tt.want)
		}
	}
	if len(asked) != 1 || asked[0].MaxTokens != 10 || asked[0].Messages[0].Content.Text != "say hi" {
		t.Errorf("the sampler was asked %+v, want once with the server's message", asked)
	}
}

// rootsServer serves a tool "where" that asks its client for its roots and answers with their URIs, or with
// "refused" when the client has none to give.
func rootsServer(t *testing.T) string {
	t.Helper()
	s := server.NewMCPServer("rooted", "1.0.0", server.WithToolCapabilities(false), server.WithRoots())
	s.AddTool(mcp.NewToolWithRawSchema("where", "Asks the client's roots.", []byte(`{"type":"object"}`)),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := server.ServerFromContext(ctx).RequestRoots(ctx, mcp.ListRootsRequest{})
			if err != nil {
				return mcp.NewToolResultText("refused"), nil
			}
			var uris []string
			for _, r := range res.Roots {
				uris = append(uris, r.Name+"="+r.URI)
			}
			return mcp.NewToolResultText(strings.Join(uris, ",")), nil
		})
	srv := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(srv.Close)
	return "  transport: streamable_http\n  url: " + srv.URL + "/mcp\n"
}

// TestRootsReachTheHost: a server's roots/list during a call goes to the task's Roots hook; without one the server
// is offered no roots and its request is refused.
func TestRootsReachTheHost(t *testing.T) {
	t.Parallel()
	src := "kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: rooted\ndescription: d\nmcp:\n" +
		rootsServer(t) + "actions:\n  - name: where\n    description: Asks.\n    parameters:\n      properties: {}\n" +
		"    execute:\n      mcp: {}\n"
	tl := load(t, src)
	roots := func(context.Context) ([]runtime.Root, error) {
		return []runtime.Root{{URI: "file:///work", Name: "work"}, {URI: "file:///tmp"}}, nil
	}
	for _, tt := range []struct {
		name  string
		roots runtime.RootsFunc
		want  string
	}{{"with a hook", roots, "work=file:///work,=file:///tmp"}, {"without", nil, "refused"}} {
		task, err := tl.NewTask(context.Background(), tool.TaskConfig{Roots: tt.roots})
		if err != nil {
			t.Fatal(err)
		}
		res, err := task.Invoke(context.Background(), "where", nil)
		_ = task.Close(context.Background())
		if err != nil || res.IsError || res.Output != tt.want {
			t.Errorf("%s: %v %+v, want %q", tt.name, err, res, tt.want)
		}
	}
}
