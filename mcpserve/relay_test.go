package mcpserve_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/mcpserve"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The requests an upstream makes during a call reach the gateway's client of the session whose call caused them,
// every field as the upstream sent it, and the client's answer goes back as the client gave it. The upstream is a
// go-sdk server (its requests carry every field of the protocol), the client a go-sdk client.

// relayUpstream records what its tools sent and what came back: each tool asks the client something and answers
// with what it got, as JSON, or reports the error it got to errs.
type relayUpstream struct {
	url  string
	errs chan error // the error of each request a tool made, nil when it was answered
	// answers receives the JSON of each answer a tool got.
	answers chan string
	// caps receives the client capabilities the gateway declared upstream, at each initialize.
	caps chan *mcp.ClientCapabilities
}

// samplingParams is a sampling request with every field the protocol has.
func samplingParams() *mcp.CreateMessageWithToolsParams {
	return &mcp.CreateMessageWithToolsParams{
		Meta:           mcp.Meta{"trace": "t-1", "progressToken": "p-1"},
		IncludeContext: "thisServer",
		MaxTokens:      64,
		Messages: []*mcp.SamplingMessageV2{{Role: "user",
			Content: []mcp.Content{&mcp.TextContent{Text: "What is 2+2?"}}}},
		Metadata: map[string]any{"team": "blue", "n": 3.0},
		ModelPreferences: &mcp.ModelPreferences{Hints: []*mcp.ModelHint{{Name: "claude"}}, CostPriority: 0.25,
			SpeedPriority: 0.5, IntelligencePriority: 0.75},
		StopSequences: []string{"STOP", "END"},
		SystemPrompt:  "Be brief.",
		Temperature:   0.3,
		Tools: []*mcp.Tool{{Name: "calc", Description: "Adds.", InputSchema: map[string]any{"type": "object",
			"properties": map[string]any{"a": map[string]any{"type": "number"}}}}},
		ToolChoice: &mcp.ToolChoice{Mode: "auto"},
	}
}

// formParams and urlParams are elicitations in form and URL mode.
func formParams() *mcp.ElicitParams {
	return &mcp.ElicitParams{Meta: mcp.Meta{"trace": "t-2"}, Mode: "form", Message: "Your name?",
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
			"name": map[string]any{"type": "string", "title": "Name", "default": "Ada"}}, "required": []any{"name"}}}
}

func urlParams() *mcp.ElicitParams {
	return &mcp.ElicitParams{Mode: "url", Message: "Sign in, please.", URL: "https://example.com/consent?x=1",
		ElicitationID: "el-7"}
}

func newRelayUpstream(t *testing.T) *relayUpstream {
	t.Helper()
	u := &relayUpstream{errs: make(chan error, 16), answers: make(chan string, 16), caps: make(chan *mcp.ClientCapabilities, 16)}
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, &mcp.ServerOptions{
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) {
			u.caps <- req.Session.InitializeParams().Capabilities
		}})
	answer := func(v any, err error) (*mcp.CallToolResult, error) {
		u.errs <- err
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
		}
		b, _ := json.Marshal(v)
		u.answers <- string(b)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
	}
	tool := func(name string, ask func(context.Context, *mcp.ServerSession) (any, error)) {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return answer(ask(ctx, req.Session))
			})
	}
	tool("sample", func(ctx context.Context, ss *mcp.ServerSession) (any, error) {
		return ss.CreateMessageWithTools(ctx, samplingParams())
	})
	tool("ask", func(ctx context.Context, ss *mcp.ServerSession) (any, error) { return ss.Elicit(ctx, formParams()) })
	tool("visit", func(ctx context.Context, ss *mcp.ServerSession) (any, error) { return ss.Elicit(ctx, urlParams()) })
	tool("roots", func(ctx context.Context, ss *mcp.ServerSession) (any, error) {
		return ss.ListRoots(ctx, &mcp.ListRootsParams{})
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	u.url = srv.URL
	return u
}

// relayGateway serves, with a task per session given the session's relay, every tool of the upstream at url, and
// returns the gateway's URL.
func relayGateway(t testing.TB, url string, block ...string) string {
	t.Helper()
	ctx := context.Background()
	src := `kind: commonagents.info/v1beta2/tool
namespace: tests
name: gw
description: A gateway.
mcp:
  transport: streamable_http
  url: ` + url + "\n" + strings.Join(block, "")
	tl, err := tool.Load(ctx, []byte(src), tool.WithDiscovery(true))
	if err != nil {
		t.Fatal(err)
	}
	start := func(ctx context.Context) (*tool.Task, error) {
		return tl.NewTask(ctx, tool.TaskConfig{MCPRelay: mcpserve.SessionRelay(ctx)})
	}
	h := mcpserve.Handler(tl, start, mcpserve.SessionConfig{ActionNames: true})
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		if err := h.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return srv.URL
}

// received is a request as the client's handler saw it.
type received struct {
	method string
	params json.RawMessage
}

// relayClient connects a go-sdk client to url with opts, its handlers reporting each request to got.
func relayClient(t *testing.T, url string, opts *mcp.ClientOptions, roots ...*mcp.Root) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, opts)
	c.AddRoots(roots...)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func call(t *testing.T, cs *mcp.ClientSession, name string) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	if len(res.Content) != 1 {
		return ""
	}
	tc, _ := res.Content[0].(*mcp.TextContent)
	if tc == nil {
		return ""
	}
	return tc.Text
}

// sameJSON reports whether a and b encode the same JSON value.
func sameJSON(t *testing.T, a, b any) bool {
	t.Helper()
	decode := func(v any) any {
		raw, ok := v.(json.RawMessage)
		if !ok {
			var err error
			if raw, err = json.Marshal(v); err != nil {
				t.Fatal(err)
			}
		}
		var out any
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		return out
	}
	return reflect.DeepEqual(decode(a), decode(b))
}

// TestRelayPassesRequestsAsTheyCame: sampling (with tools, model preferences, temperature, stop sequences,
// includeContext, metadata, _meta), elicitation in form and URL mode, and roots/list reach the gateway's client
// with every field as the upstream sent it, and the client's answers reach the upstream as the client gave them.
func TestRelayPassesRequestsAsTheyCame(t *testing.T) {
	t.Parallel()
	relayPasses(t, func(up *relayUpstream, opts *mcp.ClientOptions, roots ...*mcp.Root) (*mcp.ClientSession, func(string) string) {
		return relayClient(t, relayGateway(t, up.url), opts, roots...), func(action string) string { return action }
	})
}

// relayPasses checks that the requests of a relayUpstream reach a client connect connects through a gateway as they
// came, and its answers go back as it gave them; connect also returns the served name of each upstream tool.
func relayPasses(t *testing.T,
	connect func(*relayUpstream, *mcp.ClientOptions, ...*mcp.Root) (*mcp.ClientSession, func(string) string)) {
	up := newRelayUpstream(t)
	got := make(chan received, 8)
	sampled := &mcp.CreateMessageWithToolsResult{Meta: mcp.Meta{"cost": 1.5}, Content: []mcp.Content{
		&mcp.TextContent{Text: "4"}}, Model: "model-1", Role: "assistant", StopReason: "endTurn"}
	form := &mcp.ElicitResult{Meta: mcp.Meta{"by": "ada"}, Action: "accept", Content: map[string]any{"name": "Grace"}}
	opts := &mcp.ClientOptions{
		CreateMessageWithToolsHandler: func(_ context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
			b, _ := json.Marshal(req.Params)
			got <- received{"sampling", b}
			return sampled, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			b, _ := json.Marshal(req.Params)
			got <- received{req.Params.Mode, b}
			if req.Params.Mode == "url" {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			return form, nil
		},
		Capabilities: &mcp.ClientCapabilities{
			Sampling:    &mcp.SamplingCapabilities{Tools: &mcp.SamplingToolsCapabilities{}},
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
			RootsV2:     &mcp.RootCapabilities{ListChanged: true},
		},
	}
	roots := []*mcp.Root{{URI: "file:///work/a", Name: "a"}, {URI: "file:///work/b"}}
	cs, name := connect(up, opts, roots...)

	for _, c := range []struct {
		tool, method string
		sent, answer any
	}{
		{"sample", "sampling", samplingParams(), sampled},
		{"ask", "form", formParams(), form},
		{"visit", "url", urlParams(), &mcp.ElicitResult{Action: "decline"}},
	} {
		res := call(t, cs, name(c.tool))
		if err := <-up.errs; err != nil {
			t.Errorf("%s: the upstream's request failed: %v", c.tool, err)
			continue
		}
		r := <-got
		if r.method != c.method || !sameJSON(t, r.params, c.sent) {
			sent, _ := json.Marshal(c.sent)
			t.Errorf("%s: the client got %s %s,\nthe upstream sent %s", c.tool, r.method, r.params, sent)
		}
		if !sameJSON(t, json.RawMessage(text(res)), c.answer) {
			t.Errorf("%s: the upstream got %s, want the client's answer", c.tool, text(res))
		}
	}
	res := call(t, cs, name("roots"))
	if err := <-up.errs; err != nil {
		t.Fatalf("roots: %v", err)
	}
	if !sameJSON(t, json.RawMessage(text(res)), &mcp.ListRootsResult{Roots: roots}) {
		t.Errorf("roots: the upstream got %s, want the client's roots", text(res))
	}
}

// TestRelayOffersWhatTheClientDeclared: the gateway offers the upstream sampling, elicitation and roots only as its
// own client declared them, and an upstream request the client did not declare is refused.
func TestRelayOffersWhatTheClientDeclared(t *testing.T) {
	t.Parallel()
	up := newRelayUpstream(t)
	opts := &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
	}
	cs := relayClient(t, relayGateway(t, up.url), opts)
	<-up.caps // discovery's own connection, at load, offers nothing
	res := call(t, cs, "ask")
	if err := <-up.errs; err != nil || text(res) != `{"action":"decline"}` {
		t.Errorf("ask: %v %s, want the client's decline", err, text(res))
	}
	caps := <-up.caps
	if caps.Sampling != nil || caps.Elicitation == nil || caps.Elicitation.Form == nil || caps.Elicitation.URL != nil {
		b, _ := json.Marshal(caps)
		t.Errorf("the upstream was offered %s, want form elicitation only", b)
	}
	call(t, cs, "sample")
	if err := <-up.errs; err == nil {
		t.Error("sample: the upstream's sampling request was answered; the client declared no sampling")
	}
	call(t, cs, "visit")
	if err := <-up.errs; err == nil {
		t.Error("visit: the upstream's URL elicitation was answered; the client declared form mode only")
	}
}

// TestRelayWhenTheClientDoesNotAnswer: a client that goes away, or does not answer before the call's deadline,
// while the upstream waits for its answer leaves the elicitation cancelled ({"action":"cancel"}) and the sampling
// request failed (a JSON-RPC error) upstream: the upstream never waits longer than the call.
func TestRelayWhenTheClientDoesNotAnswer(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, block string
		goes        bool
	}{{"goes away", "", true}, {"deadline", "  timeout: 1s\n", false}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			relayUnanswered(t, c.block, c.goes)
		})
	}
}

// relayUnanswered calls tools whose upstream asks the client, which never answers: it goes away (goes), or the
// call's deadline (the server block's timeout) passes.
func relayUnanswered(t *testing.T, block string, goes bool) {
	up := newRelayUpstream(t)
	asked, release := make(chan struct{}, 2), make(chan struct{})
	wait := func(ctx context.Context) error {
		asked <- struct{}{}
		select {
		case <-ctx.Done():
		case <-release:
		}
		return errors.New("the test is over")
	}
	opts := &mcp.ClientOptions{
		CreateMessageWithToolsHandler: func(ctx context.Context, _ *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
			return nil, wait(ctx)
		},
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, wait(ctx)
		},
		Capabilities: &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{},
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
	}
	gw := relayGateway(t, up.url, block)
	defer close(release) // before the clients close, which waits for their handlers
	for _, c := range []struct {
		tool  string
		check func(error, string) bool
	}{
		{"ask", func(err error, answer string) bool { return err == nil && answer == `{"action":"cancel"}` }},
		{"sample", func(err error, _ string) bool { return err != nil }},
	} {
		cs := relayClient(t, gw, opts)
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: map[string]any{}})
			if err != nil {
				res = &mcp.CallToolResult{IsError: true}
			}
			done <- res
		}()
		<-asked
		if goes {
			// The client goes away: it ends its session (an MCP DELETE) with its handler still waiting.
			req, _ := http.NewRequest(http.MethodDelete, gw, nil)
			req.Header.Set("Mcp-Session-Id", cs.ID())
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
		}
		err, answer := <-up.errs, ""
		if err == nil {
			answer = <-up.answers
		}
		if !c.check(err, answer) {
			t.Errorf("%s: the upstream got %v %s", c.tool, err, answer)
		}
		// The call ends either way; its outcome is not pinned. At the deadline the upstream may still answer the
		// cancellation within the call's last moment; a client that ended its session may still read the result
		// on the call's own stream, which the DELETE does not close first (seen under a second go test).
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("%s: the call did not end", c.tool)
		}
	}
}

// schema202012 is the everything-server's JSON Schema 2020-12 input schema: $defs, $anchor, $ref, allOf/anyOf and
// if/then/else, none of which the vendor copies of a schema can carry whole.
const schema202012 = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
"$defs":{"address":{"$anchor":"addressDef","type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},
"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"},
"contactMethod":{"type":"string","enum":["phone","email"]},"phone":{"type":"string"},"email":{"type":"string"}},
"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],
"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},
"then":{"required":["phone"]},"else":{"required":["email"]},"additionalProperties":false}`

// TestGatewayServesSchemasAsReceived: a discovered tool is served as the upstream listed it (its input and output
// schemas byte for byte, title, icons, _meta), the vendor copy is looser, and a call the vendor copy allows but the
// schema refuses is refused naming the keyword.
func TestGatewayServesSchemasAsReceived(t *testing.T) {
	t.Parallel()
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	out := `{"type":"object","properties":{"ok":{"type":"boolean"}},"$defs":{"x":{"type":"string"}}}`
	listed := &mcp.Tool{Name: "contact", Title: "Contact", Description: "Files a contact.",
		InputSchema: json.RawMessage(schema202012), OutputSchema: json.RawMessage(out),
		Icons: []mcp.Icon{{Source: "https://example.com/i.png", MIMEType: "image/png"}},
		Meta:  mcp.Meta{"vendor/x": "y"}}
	ran := make(chan struct{}, 4)
	s.AddTool(listed, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ran <- struct{}{}
		return &mcp.CallToolResult{StructuredContent: map[string]any{"ok": true},
			Content: []mcp.Content{&mcp.TextContent{Text: `{"ok":true}`}}}, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(up.Close)
	cs := relayClient(t, relayGateway(t, up.URL), nil)
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(list.Tools) != 1 {
		t.Fatalf("tools/list: %v %+v", err, list)
	}
	served := list.Tools[0]
	if served.Annotations != nil && *served.Annotations == (mcp.ToolAnnotations{}) {
		// mcp-go writes "annotations": {} for a tool without any, which go-sdk's client reads as this.
		served.Annotations = nil
	}
	if !sameJSON(t, served, listed) {
		got, _ := json.Marshal(served)
		want, _ := json.Marshal(listed)
		t.Errorf("served\n%s\nwant the upstream's\n%s", got, want)
	}

	// The vendor copy has no allOf or conditional: it lets a phone contact without a phone through. The schema
	// does not, and says which keyword refused it; the upstream is not called.
	ctx := context.Background()
	tl, err := tool.Load(ctx, []byte("kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: gw\n"+
		"description: A gateway.\nmcp:\n  transport: streamable_http\n  url: "+up.URL+"\n"), tool.WithDiscovery(true))
	if err != nil {
		t.Fatal(err)
	}
	fs := tl.Functions(tool.Capability{})
	if len(fs) != 1 || !strings.Contains(string(fs[0].Parameters), `"phone"`) || strings.Contains(string(fs[0].Parameters), "allOf") {
		t.Fatalf("the vendor copy: %+v", fs)
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "contact", Arguments: map[string]any{"name": "Ada",
		"contactMethod": "phone", "email": "ada@example.com"}})
	if err != nil || !r.IsError {
		t.Fatalf("a phone contact without a phone: %v %+v, want refused", err, r)
	}
	if msg := text(r); !strings.Contains(msg, "phone: is required (then)") {
		t.Errorf("refused with %q, want the keyword named", msg)
	}
	r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "contact", Arguments: map[string]any{"name": "Ada"}})
	if err != nil || !r.IsError || !strings.Contains(text(r), "(anyOf in allOf)") {
		t.Errorf("a contact without a phone or an email: %v %q, want refused naming anyOf in allOf", err, text(r))
	}
	select {
	case <-ran:
		t.Error("the upstream ran a call its schema refuses")
	default:
	}
}
