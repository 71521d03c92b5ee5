package mcpserve_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/mcpserve"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const manifest = `kind: commonagents.info/v1beta2/tool
namespace: tests
name: words
description: Word helpers.
actions:
  - name: shout
    description: Returns the word in capitals.
    parameters:
      properties:
        word: {type: string}
    execute:
      cel:
        expression: "input.word.upperAscii()"
`

// serve mounts a Server of manifest on an httptest server over streamable HTTP.
func serve(t *testing.T, src string) (*mcpserve.Server, string) {
	t.Helper()
	ctx := context.Background()
	tl, err := tool.Load(ctx, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	s, err := mcpserve.New(ctx, tl, tool.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		srv.Close()
		if err := s.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return s, srv.URL
}

func TestStreamableHTTPWithGoSDKClient(t *testing.T) {
	t.Parallel()
	_, url := serve(t, manifest)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel) // after the session's close
	s := goSDKOverHTTP(t, ctx, url)
	list, err := s.ListTools(ctx, nil)
	if err != nil || len(list.Tools) != 1 || list.Tools[0].Name != "words" {
		t.Fatalf("tools = %+v, %v; want one tool named words (one action: the capability key alone)", list, err)
	}
	tests := []struct {
		args    map[string]any
		isError bool
		text    string
	}{
		{map[string]any{"word": "hey"}, false, "HEY"},
		// The same text Result.Text() gives an SDK host: kind, message and hint.
		{map[string]any{"word": 3}, true, `{"error":{"kind":"invalid_arguments","message":"arguments do not match`},
	}
	for _, tt := range tests {
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "words", Arguments: tt.args})
		if err != nil {
			t.Fatal(err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if res.IsError != tt.isError || len(text) < len(tt.text) || text[:len(tt.text)] != tt.text {
			t.Errorf("%v: isError %v, text %q; want %v, %q", tt.args, res.IsError, text, tt.isError, tt.text)
		}
	}
}

// TestStreamableHTTPWithOurBackend calls the served tool through the mcp backend over streamable HTTP.
func TestStreamableHTTPWithOurBackend(t *testing.T) {
	t.Parallel()
	_, url := serve(t, manifest)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tl, err := tool.Load(ctx, []byte(`kind: commonagents.info/v1beta2/tool
namespace: tests
name: client
description: Calls words over MCP.
actions:
  - name: shout
    description: Shouts.
    parameters:
      properties:
        word: {type: string}
    execute:
      mcp:
        transport: streamable_http
        url: `+url+`
        tool_name: words
`))
	if err != nil {
		t.Fatal(err)
	}
	task, err := tl.NewTask(ctx, tool.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = task.Close(ctx) }()
	res, err := task.Invoke(ctx, "shout", map[string]any{"word": "quiet"})
	if err != nil || res.IsError || res.Output != "QUIET" {
		t.Fatalf("shout: %v %+v", err, res)
	}
}

// TestTaskOverAfterUnrecoverable: after an unrecoverable error the server refuses every later call, and the task
// New started is closed.
func TestTaskOverAfterUnrecoverable(t *testing.T) {
	ctx := context.Background()
	src := manifest + `  - name: broken
    description: Calls a server that cannot start.
    parameters:
      properties: {}
    execute:
      mcp:
        transport: stdio
        command: /nonexistent/mcp-server
`
	tl, err := tool.Load(ctx, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	s, c := newInProcess(t, tl)
	call := func(name string, args map[string]any) (*mcpgo.CallToolResult, error) {
		req := mcpgo.CallToolRequest{}
		req.Params.Name = name
		req.Params.Arguments = args
		return c.CallTool(ctx, req)
	}
	if _, err := call("words_broken", map[string]any{}); err == nil || !strings.Contains(err.Error(), "unrecoverable") &&
		!strings.Contains(err.Error(), "starting") {
		t.Fatalf("broken: %v, want a JSON-RPC error", err)
	}
	res, err := call("words_shout", map[string]any{"word": "after"})
	if err == nil || !strings.Contains(err.Error(), "the task is over") {
		t.Errorf("a call after an unrecoverable error: %v %+v, want it refused", err, res)
	}
	if _, err := s.Task().Invoke(ctx, "shout", map[string]any{"word": "x"}); !errors.Is(err, tool.ErrClosed) {
		t.Errorf("the task New started is not closed: %v", err)
	}
}

// TestServedSchemaKeepsItsDialect pins issue 29 and the MCP conformance scenario json-schema-2020-12: the served
// inputSchema keeps the `$schema` the manifest names, and a 2020-12 schema loads and validates as 2020-12.
func TestServedSchemaKeepsItsDialect(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ uri, extra string }{
		{"https://json-schema.org/draft/2020-12/schema", `, prefixItems: [{type: string}], items: false`},
		{"http://json-schema.org/draft-07/schema#", ``},
	} {
		src := strings.Replace(manifest, "      properties:\n        word: {type: string}\n",
			"      $schema: \""+tt.uri+"\"\n      properties:\n        word: {type: string}\n        pair: {type: array"+tt.extra+"}\n", 1)
		_, url := serve(t, src)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		t.Cleanup(cancel) // after the session's close
		s := goSDKOverHTTP(t, ctx, url)
		list, err := s.ListTools(ctx, nil)
		if err != nil || len(list.Tools) != 1 {
			t.Fatalf("tools = %+v, %v", list, err)
		}
		in, _ := list.Tools[0].InputSchema.(map[string]any)
		if in["$schema"] != tt.uri {
			t.Errorf("served inputSchema %v: $schema %v, want %s", in, in["$schema"], tt.uri)
		}
		if tt.extra != "" {
			res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "words",
				Arguments: map[string]any{"word": "a", "pair": []any{"x", "y"}}})
			if err != nil || !res.IsError {
				t.Errorf("a second item past prefixItems with items: false was accepted (%v)", err)
			}
		}
	}
}
