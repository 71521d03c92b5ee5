package mcpserve_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/mcpserve"
	mcpclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

const gatewaySecret = "hunter2-gateway-secret"

// mixedBlocks is what the upstream's tool "mixed" answers: a block of every kind, in an order of its own.
func mixedBlocks() []mcpgo.Content {
	size := int64(42)
	return []mcpgo.Content{
		mcpgo.NewImageContent("iVBORw0KGgo=", "image/png"),
		mcpgo.NewTextContent("first text"),
		mcpgo.NewAudioContent("UklGRg==", "audio/wav"),
		mcpgo.ResourceLink{Type: "resource_link", URI: "file:///a.txt", Name: "a.txt", Title: "A", Description: "a file",
			MIMEType: "text/plain", Size: &size},
		mcpgo.NewEmbeddedResource(mcpgo.TextResourceContents{URI: "file:///b.txt", MIMEType: "text/plain", Text: "bee"}),
		mcpgo.NewEmbeddedResource(mcpgo.BlobResourceContents{URI: "file:///c.bin", MIMEType: "application/octet-stream",
			Blob: "AAEC"}),
		mcpgo.NewTextContent("second text"),
	}
}

// upstream is an MCP server with a tool of mixed content (with structured content, a title and an output schema)
// and a tool that answers with the gateway's secret, in text and base64.
func upstream(t *testing.T) string {
	t.Helper()
	s := server.NewMCPServer("upstream", "1.0.0", server.WithToolCapabilities(false), server.WithLogging())
	mixed := mcpgo.NewToolWithRawSchema("mixed", "Answers a block of every kind.", []byte(`{"type":"object"}`))
	mixed.Title = "Mixed content"
	mixed.RawOutputSchema = []byte(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)
	s.AddTool(mixed, func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return &mcpgo.CallToolResult{Content: mixedBlocks(), StructuredContent: map[string]any{"n": 7}}, nil
	})
	s.AddTool(mcpgo.NewToolWithRawSchema("leak", "Answers the secret.", []byte(`{"type":"object"}`)),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			encoded := base64.StdEncoding.EncodeToString([]byte(gatewaySecret))
			return &mcpgo.CallToolResult{Content: []mcpgo.Content{
				mcpgo.NewTextContent("the key is " + gatewaySecret),
				mcpgo.NewImageContent(encoded, "image/png"),
				mcpgo.NewEmbeddedResource(mcpgo.BlobResourceContents{URI: "file:///k", Blob: encoded}),
			}}, nil
		})
	s.AddTool(mcpgo.NewToolWithRawSchema("steps", "Reports three steps.", []byte(`{"type":"object"}`)), steps)
	srv := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// stepsSeen is closed by a test when its client has seen the notifications of tool steps: the tool answers only
// then (or after a minute), since notifications that arrive after the result are dropped.
var stepsSeen = map[string]chan struct{}{}

// sendSteps sends the caller three progress notifications (on its progressToken, with the message "step N") and
// three log messages from logger, logFormat of N, alternately.
func sendSteps(ctx context.Context, req mcpgo.CallToolRequest, logger, logFormat string) {
	srv := server.ServerFromContext(ctx)
	var token mcpgo.ProgressToken
	if req.Params.Meta != nil {
		token = req.Params.Meta.ProgressToken
	}
	for n := 1; n <= 3; n++ {
		_ = srv.SendNotificationToClient(ctx, string(mcpgo.MethodNotificationProgress),
			map[string]any{"progressToken": token, "progress": n, "total": 3, "message": fmt.Sprintf("step %d", n)})
		_ = srv.SendLogMessageToClient(ctx, mcpgo.NewLoggingMessageNotification(mcpgo.LoggingLevelInfo, logger,
			fmt.Sprintf(logFormat, n)))
	}
}

// steps sends three progress notifications and three log messages, then waits for the test's client to see them.
func steps(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
	sendSteps(ctx, req, "steps", "did step %d")
	select {
	case <-stepsSeen[req.GetString("test", "")]:
	case <-time.After(time.Minute):
	case <-ctx.Done():
	}
	return mcpgo.NewToolResultText("3 steps"), nil
}

// gateway serves, through mcpserve, a manifest that discovers every tool of the upstream; it returns the task's
// server and a client of it.
func gateway(t *testing.T) (*mcpserve.Server, *mcpclient.Client) {
	t.Helper()
	ctx := context.Background()
	src := `kind: commonagents.info/v1beta2/tool
namespace: tests
name: gw
description: A gateway.
settings:
  properties:
    key: {type: string, format: password}
mcp:
  transport: streamable_http
  url: ` + upstream(t) + `
  headers:
    X-Key: "{settings.key}"
`
	tl, err := tool.Load(ctx, []byte(src), tool.WithDiscovery(true),
		tool.WithSettings(map[string]any{"key": gatewaySecret}))
	if err != nil {
		t.Fatal(err)
	}
	s, c := newInProcess(t, tl)
	return s, c
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestGatewayServesContentAsItCame: an upstream tool's blocks reach Result.Content typed and in order, and the
// gateway serves them as they came, with the structured content, the title and the output schema.
func TestGatewayServesContentAsItCame(t *testing.T) {
	t.Parallel()
	s, c := gateway(t)
	ctx := context.Background()

	res, err := s.Task().Invoke(ctx, "mixed", nil)
	if err != nil || res.IsError {
		t.Fatalf("mixed: %v %+v", err, res)
	}
	types := make([]string, len(res.Content))
	for n, b := range res.Content {
		types[n] = b.Type
	}
	if got := strings.Join(types, ","); got != "image,text,audio,resource_link,resource,resource,text" {
		t.Errorf("Result.Content types %s, want the upstream's order", got)
	}
	if res.Text() != `{"n":7}` {
		t.Errorf("Text() = %q, want the structured content", res.Text())
	}

	list, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var served *mcpgo.Tool
	for n := range list.Tools {
		if list.Tools[n].Name == "gw_mixed" {
			served = &list.Tools[n]
		}
	}
	if served == nil {
		t.Fatalf("no gw_mixed in %+v", list.Tools)
	}
	// As the upstream listed it: a title, and annotations without one.
	if served.Title != "Mixed content" || served.Annotations.Title != "" {
		t.Errorf("served title %q (annotations %q), want the upstream's", served.Title, served.Annotations.Title)
	}
	if got := jsonOf(t, served.OutputSchema); !strings.Contains(got, `"required":["n"]`) {
		t.Errorf("served outputSchema %s, want the upstream's", got)
	}

	req := mcpgo.CallToolRequest{}
	req.Params.Name = "gw_mixed"
	out, err := c.CallTool(ctx, req)
	if err != nil || out.IsError {
		t.Fatalf("gw_mixed: %v %+v", err, out)
	}
	if got, want := jsonOf(t, out.Content), jsonOf(t, mixedBlocks()); got != want {
		t.Errorf("served content\n%s\nwant the upstream's\n%s", got, want)
	}
	if got := jsonOf(t, out.StructuredContent); got != `{"n":7}` {
		t.Errorf("served structured content %s, want {\"n\":7}", got)
	}
}

// TestGatewayMasksSecretsInEveryBlock: a secret in any block, as text or base64, is masked in Result.Content and in
// what the gateway serves.
func TestGatewayMasksSecretsInEveryBlock(t *testing.T) {
	t.Parallel()
	s, c := gateway(t)
	ctx := context.Background()
	encoded := base64.StdEncoding.EncodeToString([]byte(gatewaySecret))
	res, err := s.Task().Invoke(ctx, "leak", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := jsonOf(t, res.Content); len(res.Content) != 3 || strings.Contains(got, gatewaySecret) ||
		strings.Contains(got, encoded) {
		t.Errorf("Result.Content %s holds the secret", got)
	}
	req := mcpgo.CallToolRequest{}
	req.Params.Name = "gw_leak"
	out, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := jsonOf(t, out); strings.Contains(got, gatewaySecret) || strings.Contains(got, encoded) {
		t.Errorf("served result %s holds the secret", got)
	}
}

// TestGatewayForwardsProgressAndLogs: an upstream's progress notifications reach the gateway's client when it sent a
// progressToken, and its log messages once the client set a log level; all three of each.
func TestGatewayForwardsProgressAndLogs(t *testing.T) {
	seen := make(chan struct{})
	stepsSeen[t.Name()] = seen // not parallel: the map is written here
	_, c := gateway(t)
	ctx := context.Background()
	lreq := mcpgo.SetLevelRequest{}
	lreq.Params.Level = mcpgo.LoggingLevelDebug
	if err := c.SetLevel(ctx, lreq); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var progress, logs []string
	closeSeen := sync.OnceFunc(func() { close(seen) }) // other notifications may follow the six
	c.OnNotification(func(n mcpgo.JSONRPCNotification) {
		mu.Lock()
		defer mu.Unlock()
		switch n.Method {
		case string(mcpgo.MethodNotificationProgress):
			progress = append(progress, fmt.Sprint(n.Params.AdditionalFields["progressToken"], " ",
				n.Params.AdditionalFields["message"]))
		case string(mcpgo.MethodNotificationMessage):
			logs = append(logs, fmt.Sprint(n.Params.AdditionalFields["data"]))
		}
		if len(progress) == 3 && len(logs) == 3 {
			closeSeen()
		}
	})
	req := mcpgo.CallToolRequest{}
	req.Params.Name = "gw_steps"
	req.Params.Arguments = map[string]any{"test": t.Name()}
	req.Params.Meta = &mcpgo.Meta{ProgressToken: "tok-1"}
	res, err := c.CallTool(ctx, req)
	if err != nil || res.IsError {
		t.Fatalf("gw_steps: %v %+v", err, res)
	}
	mu.Lock()
	defer mu.Unlock()
	// Compared as sets: notifications can reach the handler in another order than they were sent (under load they
	// did: "did step 2", "did step 3", "did step 1"), and a progress notification carries its own position.
	slices.Sort(progress)
	slices.Sort(logs)
	if strings.Join(progress, ",") != "tok-1 step 1,tok-1 step 2,tok-1 step 3" {
		t.Errorf("progress notifications %q, want the three steps under the client's token", progress)
	}
	if strings.Join(logs, ",") != "did step 1,did step 2,did step 3" {
		t.Errorf("log messages %q, want the upstream's three", logs)
	}
}
