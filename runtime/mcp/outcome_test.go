package mcp_test

// Tests of outbound calls under faults: a request that may have reached the server is sent again only for an
// idempotent or read-only action; a lost reply is a recoverable error saying the outcome is unknown.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/runtime"
	mcpbackend "github.com/commonagents-go/tool/runtime/mcp"
	"github.com/commonagents-go/tool/tooltest"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// counting is an in-process MCP server whose tool "record" counts the calls it ran, after waiting delay.
type counting struct {
	runs  atomic.Int32
	delay time.Duration
}

func (c *counting) mcpServer() *server.MCPServer {
	s := server.NewMCPServer("counting", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewToolWithRawSchema("record", "Records a note.",
		[]byte(`{"type":"object","properties":{"note":{"type":"string"}}}`)),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if c.delay > 0 {
				select {
				case <-time.After(c.delay):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			n := c.runs.Add(1)
			return mcp.NewToolResultText(fmt.Sprintf("recorded %s (%d)", r.GetString("note", ""), n)), nil
		})
	return s
}

// recordManifest binds the action record to the counting server, with annotations (YAML flow map, or "").
func recordManifest(server, annotations string) string {
	src := "kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: counting\ndescription: A counting server.\n" +
		"mcp:\n" + server + "actions:\n  - name: record\n    description: Records a note.\n" +
		"    parameters:\n      properties:\n        note: {type: string}\n    execute:\n      mcp: {}\n"
	if annotations != "" {
		src += "    annotations: " + annotations + "\n"
	}
	return src
}

// losingReplies serves h, except that the first n tools/call requests run to the end on the server and then
// lose their reply: the connection is closed without an answer.
func losingReplies(h http.Handler, n int32) http.Handler {
	var lose atomic.Int32
	lose.Store(n)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"tools/call"`)) && lose.Add(-1) >= 0 {
				h.ServeHTTP(httptest.NewRecorder(), r) // the call runs; its reply goes nowhere
				if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
					_ = conn.Close()
				}
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

func TestLostReplyIsNotSentAgain(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, annotations string
		resent            bool
	}{
		{"not idempotent", "", false},
		{"marked idempotent: false", "{idempotent: false, read_only: false}", false},
		{"idempotent", "{idempotent: true}", true},
		{"read-only", "{read_only: true}", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cs := &counting{}
			srv := httptest.NewServer(losingReplies(server.NewStreamableHTTPServer(cs.mcpServer()), 1))
			t.Cleanup(srv.Close)
			task := newTask(t, load(t, recordManifest("  transport: streamable_http\n  url: "+srv.URL+"/mcp\n", c.annotations)))
			res, err := task.Invoke(context.Background(), "record", map[string]any{"note": "a"})
			if err != nil {
				t.Fatalf("a lost reply ended the task: %v", err)
			}
			if c.resent {
				if res.IsError || res.Output != "recorded a (2)" || res.Telemetry.Attempts != 2 {
					t.Fatalf("result %+v %+v, want the call sent again and answered", res.Output, res.Error)
				}
				if n := cs.runs.Load(); n != 2 {
					t.Errorf("the server ran the call %d times, want 2", n)
				}
				return
			}
			if n := cs.runs.Load(); n != 1 {
				t.Fatalf("the server ran the call %d times, want exactly once", n)
			}
			assertOutcomeUnknown(t, res, runtime.KindUnavailable)
			// The connection is re-established for the next call.
			res, err = task.Invoke(context.Background(), "record", map[string]any{"note": "b"})
			if err != nil || res.IsError || res.Output != "recorded b (2)" {
				t.Fatalf("the call after: %v %+v %+v", err, res.Output, res.Error)
			}
		})
	}
}

// assertOutcomeUnknown checks a recoverable, not retryable error of kind that says the outcome is unknown and
// hints at checking the state.
func assertOutcomeUnknown(t *testing.T, res *tool.Result, kind string) {
	t.Helper()
	e := res.Error
	if !res.IsError || e == nil {
		t.Fatalf("result %+v, want an error", res.Output)
	}
	if e.Kind != kind || e.Retryable || !e.OutcomeUnknown || !strings.Contains(e.Message, "outcome is unknown") {
		t.Errorf("error %+v, want %s, not retryable, saying the outcome is unknown", e, kind)
	}
	if e.Hint == nil || !strings.Contains(e.Hint.Message, "check the state") {
		t.Errorf("hint %+v, want one to check the state before calling again", e.Hint)
	}
	if !strings.Contains(string(res.OutputJSON), `"outcome_unknown":true`) {
		t.Errorf("the LLM's output %s does not say the outcome is unknown", res.OutputJSON)
	}
}

// TestSSECallLongerThanTheClientWait: a call that takes longer than the SSE client's default wait for a reply
// (mcp-go's 60s, shortened here through Backend.SSEResponseTimeout) but less than its own timeout is answered,
// and runs once.
func TestSSECallLongerThanTheClientWait(t *testing.T) {
	t.Parallel()
	cs := &counting{delay: 600 * time.Millisecond}
	srv := httptest.NewUnstartedServer(nil)
	srv.Config.Handler = server.NewSSEServer(cs.mcpServer(), server.WithBaseURL("http://"+srv.Listener.Addr().String()))
	srv.Start()
	t.Cleanup(srv.Close)
	reg := runtime.NewRegistry()
	if err := reg.Register(mcpbackend.Backend{SSEResponseTimeout: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	src := recordManifest("  transport: sse\n  url: "+srv.URL+"/sse\n  timeout: 30s\n", "")
	task := newTask(t, load(t, src, tool.WithRuntimes(reg)))
	res, err := task.Invoke(context.Background(), "record", map[string]any{"note": "slow"})
	if err != nil || res.IsError || res.Output != "recorded slow (1)" {
		t.Fatalf("slow call over SSE: %v %+v %+v", err, res.Output, res.Error)
	}
	if n := cs.runs.Load(); n != 1 {
		t.Errorf("the server ran the call %d times, want once", n)
	}
}

// TestSSECallTimeoutIsNoLostConnection: a call that outlasts its own timeout over SSE is a timeout with the
// outcome unknown, sent once, and the connection stays for the next call.
func TestSSECallTimeoutIsNoLostConnection(t *testing.T) {
	t.Parallel()
	cs := &counting{delay: 2 * time.Second}
	srv := httptest.NewUnstartedServer(nil)
	srv.Config.Handler = server.NewSSEServer(cs.mcpServer(), server.WithBaseURL("http://"+srv.Listener.Addr().String()))
	srv.Start()
	t.Cleanup(srv.Close)
	rec := &facts{}
	task := newTask(t, load(t, recordManifest("  transport: sse\n  url: "+srv.URL+"/sse\n  timeout: 300ms\n", ""),
		tool.WithObserver(rec)))
	res, err := task.Invoke(context.Background(), "record", map[string]any{"note": "late"})
	if err != nil {
		t.Fatalf("a timeout ended the task: %v", err)
	}
	assertOutcomeUnknown(t, res, runtime.KindTimeout)
	if n := cs.runs.Load(); n > 1 {
		t.Errorf("the server ran the call %d times, want at most once", n)
	}
}

// answering serves h, except that tools/call requests get answer instead (after the server ran them, when run).
func answering(h http.Handler, run bool, answer func(w http.ResponseWriter)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"tools/call"`)) {
				if run {
					h.ServeHTTP(httptest.NewRecorder(), r)
				}
				answer(w)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// sseServer serves the counting server over SSE through wrap.
func sseServer(t *testing.T, cs *counting, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	srv.Config.Handler = wrap(server.NewSSEServer(cs.mcpServer(), server.WithBaseURL("http://"+srv.Listener.Addr().String())))
	srv.Start()
	t.Cleanup(srv.Close)
	return "  transport: sse\n  url: " + srv.URL + "/sse\n  timeout: 20s\n"
}

// streamableServer serves the counting server over streamable HTTP through wrap.
func streamableServer(t *testing.T, cs *counting, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(wrap(server.NewStreamableHTTPServer(cs.mcpServer())))
	t.Cleanup(srv.Close)
	return "  transport: streamable_http\n  url: " + srv.URL + "/mcp\n  timeout: 20s\n"
}

// garbling replaces the data of the SSE events that carry a tool result with text that is not JSON.
type garbling struct {
	http.ResponseWriter
}

func (g garbling) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"recorded `)) {
		if _, err := g.ResponseWriter.Write([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\n\n")); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return g.ResponseWriter.Write(p)
}

func (g garbling) Flush() { http.NewResponseController(g.ResponseWriter).Flush() }

// TestMalformedReplyIsRecoverable: a reply that is not JSON is a recoverable malformed_response with the outcome
// unknown, on every HTTP transport, and the task goes on.
func TestMalformedReplyIsRecoverable(t *testing.T) {
	t.Parallel()
	cases := map[string]func(*testing.T, *counting) string{
		"streamable_http json": func(t *testing.T, cs *counting) string {
			return streamableServer(t, cs, func(h http.Handler) http.Handler {
				return answering(h, true, func(w http.ResponseWriter) {
					w.Header().Set("Content-Type", "application/json")
					_, _ = io.WriteString(w, `{not json`)
				})
			})
		},
		"streamable_http json cut short": func(t *testing.T, cs *counting) string {
			return streamableServer(t, cs, func(h http.Handler) http.Handler {
				return answering(h, true, func(w http.ResponseWriter) {
					w.Header().Set("Content-Type", "application/json")
					_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`)
				})
			})
		},
		"streamable_http event stream": func(t *testing.T, cs *counting) string {
			return streamableServer(t, cs, func(h http.Handler) http.Handler {
				return answering(h, true, func(w http.ResponseWriter) {
					w.Header().Set("Content-Type", "text/event-stream")
					_, _ = io.WriteString(w, "event: message\ndata: {\"jsonrpc\": \"2.0\", \"id\"\n\n")
				})
			})
		},
		"sse": func(t *testing.T, cs *counting) string {
			var garble atomic.Bool
			garble.Store(true)
			return sseServer(t, cs, func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodGet && garble.Swap(false) {
						w = garbling{w}
					}
					h.ServeHTTP(w, r)
				})
			})
		},
	}
	for name, serve := range cases {
		for _, annotations := range []string{"", "{idempotent: true}"} { // idempotent: no second attempt either
			t.Run(name+annotations, func(t *testing.T) {
				t.Parallel()
				cs := &counting{}
				task := newTask(t, load(t, recordManifest(serve(t, cs), annotations)))
				res, err := task.Invoke(context.Background(), "record", map[string]any{"note": "a"})
				if err != nil {
					t.Fatalf("a malformed reply ended the task: %v", err)
				}
				if annotations == "" {
					assertOutcomeUnknown(t, res, runtime.KindMalformedResponse)
				} else if res.Error == nil || res.Error.Kind != runtime.KindMalformedResponse || !res.Error.OutcomeUnknown {
					t.Errorf("error %+v, want malformed_response with the outcome unknown", res.Error)
				}
				if n := cs.runs.Load(); n != 1 {
					t.Errorf("the server ran the call %d times, want once", n)
				}
			})
		}
	}
}

// TestRateLimitedCarriesRetryAfter: a 429 answer to tools/call is rate_limited with the Retry-After it gave, on
// every HTTP transport.
func TestRateLimitedCarriesRetryAfter(t *testing.T) {
	t.Parallel()
	tooMany := func(h http.Handler) http.Handler {
		return answering(h, false, func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "7")
			http.Error(w, "slow down", http.StatusTooManyRequests)
		})
	}
	for name, serve := range map[string]func(*testing.T, *counting, func(http.Handler) http.Handler) string{
		"streamable_http": streamableServer, "sse": sseServer,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cs := &counting{}
			task := newTask(t, load(t, recordManifest(serve(t, cs, tooMany), "")))
			res, err := task.Invoke(context.Background(), "record", map[string]any{"note": "a"})
			if err != nil {
				t.Fatalf("a 429 ended the task: %v", err)
			}
			if e := res.Error; e == nil || e.Kind != runtime.KindRateLimited || !e.Retryable || e.RetryAfter != 7*time.Second ||
				e.OutcomeUnknown {
				t.Fatalf("error %+v, want a retryable rate_limited after 7s", e)
			}
			if n := cs.runs.Load(); n != 0 {
				t.Errorf("the server ran the call %d times, want none", n)
			}
		})
	}
}

// TestOutboundFaultsLeaveNothing: after a lost reply, an unreadable SSE stream and Close, no goroutine is left
// (the stream sniffers end with their streams).
func TestOutboundFaultsLeaveNothing(t *testing.T) {
	tooltest.NoLeaks(t)
	cs := &counting{}
	lost := streamableServer(t, cs, func(h http.Handler) http.Handler { return losingReplies(h, 1) })
	var garble atomic.Bool
	garble.Store(true)
	garbled := sseServer(t, cs, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && garble.Swap(false) {
				w = garbling{w}
			}
			h.ServeHTTP(w, r)
		})
	})
	for _, srv := range []string{lost, garbled} {
		task := newTask(t, load(t, recordManifest(srv, "")))
		for _, note := range []string{"a", "b"} {
			if _, err := task.Invoke(context.Background(), "record", map[string]any{"note": note}); err != nil {
				t.Fatal(err)
			}
		}
		if err := task.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := cs.runs.Load(); n != 4 {
		t.Errorf("the servers ran %d calls, want 4", n)
	}
}

// TestMalformedStdioReply: over stdio, a reply that is JSON-RPC but not a tool result is a recoverable
// malformed_response with the outcome unknown.
func TestMalformedStdioReply(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	srv := "  transport: stdio\n  command: " + exe + "\n  env:\n" +
		"    MCP_FAKE_TOOL_REPLY: not_a_tool_result\n  timeout: 20s\n"
	task := newTask(t, load(t, recordManifest(srv, "")))
	res, err := task.Invoke(context.Background(), "record", map[string]any{"note": "a"})
	if err != nil {
		t.Fatalf("a malformed reply ended the task: %v", err)
	}
	assertOutcomeUnknown(t, res, runtime.KindMalformedResponse)
}

// cutting closes the connection of an SSE stream instead of writing the event that carries a tool result.
type cutting struct {
	http.ResponseWriter
	cut bool
}

func (c *cutting) Write(p []byte) (int, error) {
	if c.cut || bytes.Contains(p, []byte(`"recorded `)) {
		if !c.cut {
			c.cut = true
			if conn, _, err := http.NewResponseController(c.ResponseWriter).Hijack(); err == nil {
				_ = conn.Close()
			}
		}
		return 0, io.ErrClosedPipe
	}
	return c.ResponseWriter.Write(p)
}

func (c *cutting) Flush() {
	if !c.cut {
		_ = http.NewResponseController(c.ResponseWriter).Flush()
	}
}

// TestLostSSEReplyIsNotSentAgain: over SSE, the stream breaking after the server ran the call (its reply was on
// the way) leaves the outcome unknown; the call is not sent again and the next call reconnects.
func TestLostSSEReplyIsNotSentAgain(t *testing.T) {
	t.Parallel()
	cs := &counting{}
	var cut atomic.Bool
	cut.Store(true)
	srv := sseServer(t, cs, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && cut.Swap(false) {
				w = &cutting{ResponseWriter: w}
			}
			h.ServeHTTP(w, r)
		})
	})
	task := newTask(t, load(t, recordManifest(srv, "")))
	res, err := task.Invoke(context.Background(), "record", map[string]any{"note": "a"})
	if err != nil {
		t.Fatalf("a lost reply ended the task: %v", err)
	}
	if n := cs.runs.Load(); n != 1 {
		t.Fatalf("the server ran the call %d times, want exactly once", n)
	}
	assertOutcomeUnknown(t, res, runtime.KindUnavailable)
	res, err = task.Invoke(context.Background(), "record", map[string]any{"note": "b"})
	if err != nil || res.IsError || res.Output != "recorded b (2)" {
		t.Fatalf("the call after: %v %+v %+v", err, res.Output, res.Error)
	}
}

// TestForgottenSessionIsReconnected: a streamable HTTP server that answers 404 for a session it no longer knows
// (after a restart; it ran nothing) gets a new session and the call, which runs once.
func TestForgottenSessionIsReconnected(t *testing.T) {
	t.Parallel()
	cs := &counting{}
	var forget atomic.Bool
	front := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") != "" && forget.Swap(false) {
				http.Error(w, "Session terminated", http.StatusNotFound)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	task := newTask(t, load(t, recordManifest(streamableServer(t, cs, front), "")))
	if res, err := task.Invoke(context.Background(), "record", map[string]any{"note": "a"}); err != nil || res.IsError {
		t.Fatalf("first call: %v %+v", err, res.Error)
	}
	forget.Store(true)
	res, err := task.Invoke(context.Background(), "record", map[string]any{"note": "b"})
	if err != nil || res.IsError || res.Output != "recorded b (2)" || res.Telemetry.Attempts != 2 {
		t.Fatalf("call after the restart: %v %+v %+v (attempts %d)", err, res.Output, res.Error, res.Telemetry.Attempts)
	}
}

// TestHTTPStatusIsRecoverable: a 503 or 429 answer to tools/call over streamable HTTP is a recoverable error of
// that call, not a lost connection, and the task goes on.
func TestHTTPStatusIsRecoverable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status int
		kind   string
	}{
		{http.StatusServiceUnavailable, "unavailable"},
		{http.StatusTooManyRequests, "rate_limited"},
		{http.StatusBadRequest, "invalid_request"},
	}
	for _, c := range cases {
		t.Run(strconv.Itoa(c.status), func(t *testing.T) {
			t.Parallel()
			u, _ := remoteServer(t, "-http")
			target, _ := url.Parse(u)
			proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
			var failing atomic.Bool
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost && failing.Load() {
					body, _ := io.ReadAll(r.Body)
					if bytes.Contains(body, []byte(`"tools/call"`)) {
						http.Error(w, "upstream busy", c.status)
						return
					}
					r.Body = io.NopCloser(bytes.NewReader(body))
				}
				proxy.ServeHTTP(w, r)
			}))
			t.Cleanup(front.Close)
			task := newTask(t, load(t, manifest("  transport: streamable_http\n  url: "+front.URL+target.Path+"\n", "echo")))
			call := func(text string) (*tool.Result, error) {
				return task.Invoke(context.Background(), "echo", map[string]any{"text": text})
			}
			if res, err := call("a"); err != nil || res.IsError {
				t.Fatalf("first call: %v %+v", err, res)
			}
			failing.Store(true)
			res, err := call("b")
			if err != nil {
				t.Fatalf("a %d ended the task: %v", c.status, err)
			}
			if !res.IsError || res.Error.Kind != c.kind || !strings.Contains(res.Error.Message, "upstream busy") {
				t.Errorf("result error %+v, want %s quoting the body", res.Error, c.kind)
			}
			failing.Store(false)
			if res, err := call("c"); err != nil || res.Output != "c" {
				t.Errorf("the call after: %v %+v", err, res)
			}
		})
	}
}

// tokens hands out "tok-1", "tok-2", ... and counts the requests.
type tokens struct{ n atomic.Int32 }

func (k *tokens) Token(context.Context, string, tool.AuthRequest) (string, error) {
	return fmt.Sprintf("tok-%d", k.n.Add(1)), nil
}

// TestUnauthorizedAsksForTheTokenAgain: a 401 to tools/call (with WWW-Authenticate) connects anew, which asks the
// auth provider once more; when the server refuses that token too, the error names its resource metadata URL.
func TestUnauthorizedAsksForTheTokenAgain(t *testing.T) {
	t.Parallel()
	const meta = "https://auth.example/.well-known/oauth-protected-resource"
	for _, tt := range []struct {
		name     string
		accepted string // the token the server takes
		ok       bool
	}{{"a fresh token is taken", "Bearer tok-2", true}, {"no token is taken", "Bearer none", false}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cs := &counting{}
			srv := streamableServer(t, cs, func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					body, _ := io.ReadAll(r.Body)
					r.Body = io.NopCloser(bytes.NewReader(body))
					if bytes.Contains(body, []byte(`"tools/call"`)) && r.Header.Get("Authorization") != tt.accepted {
						w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+meta+`"`)
						http.Error(w, "unauthorized", http.StatusUnauthorized)
						return
					}
					h.ServeHTTP(w, r)
				})
			})
			src := recordManifest(srv+"  headers:\n    Authorization: \"Bearer {auth.svc()}\"\n", "")
			k := &tokens{}
			task := newTask(t, load(t, src, tool.WithAuth(k)))
			res, err := task.Invoke(context.Background(), "record", map[string]any{"note": "a"})
			if err != nil {
				t.Fatal(err)
			}
			if n := k.n.Load(); n != 2 {
				t.Errorf("the auth provider was asked %d times, want twice (once more after the 401)", n)
			}
			if tt.ok {
				if res.IsError || cs.runs.Load() != 1 {
					t.Errorf("result %+v (runs %d), want the call run once with the fresh token", res.Error, cs.runs.Load())
				}
				return
			}
			if res.Error == nil || res.Error.Kind != runtime.KindInvalidRequest || !strings.Contains(res.Error.Message, meta) {
				t.Errorf("error %+v, want invalid_request naming %s", res.Error, meta)
			}
			if cs.runs.Load() != 0 {
				t.Errorf("the server ran a call it refused")
			}
		})
	}
}
