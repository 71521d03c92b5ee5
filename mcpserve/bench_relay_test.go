package mcpserve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkRelayElicitation: an elicitation round trip as the upstream waits for it (from its elicitation/create to
// the answer), with the client behind the gateway (forwarded) and connected to the same upstream directly
// (direct), interleaved call by call in one run; and the whole tools/call each way. The client answers at once.
// Metrics: direct-elicit-ns, forwarded-elicit-ns and their ratio; direct-call-ns, forwarded-call-ns.
func BenchmarkRelayElicitation(b *testing.B) {
	elicited := make(chan time.Duration, 1)
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			start := time.Now()
			res, err := req.Session.Elicit(ctx, formParams())
			elicited <- time.Since(start)
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action}}}, nil
		})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer up.Close()
	opts := &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace"}}, nil
		},
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
	}
	gw := relayGateway(b, up.URL)
	ctx := context.Background()
	connect := func(url string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, opts).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: url}, nil)
		if err != nil {
			b.Fatal(err)
		}
		return cs
	}
	direct, forwarded := connect(up.URL), connect(gw)
	defer direct.Close()
	defer forwarded.Close()
	var elicit, call [2]time.Duration
	ask := func(n int, cs *mcp.ClientSession) {
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}})
		call[n] += time.Since(start)
		elicit[n] += <-elicited
		if err != nil || res.IsError {
			b.Fatalf("ask: %v %+v", err, res)
		}
	}
	ask(0, direct) // the gateway's session task starts on its first call: not measured
	ask(1, forwarded)
	elicit, call = [2]time.Duration{}, [2]time.Duration{}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ask(0, direct)
		ask(1, forwarded)
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(elicit[0])/n, "direct-elicit-ns")
	b.ReportMetric(float64(elicit[1])/n, "forwarded-elicit-ns")
	b.ReportMetric(float64(elicit[1])/float64(elicit[0]), "elicit-ratio")
	b.ReportMetric(float64(call[0])/n, "direct-call-ns")
	b.ReportMetric(float64(call[1])/n, "forwarded-call-ns")
}
