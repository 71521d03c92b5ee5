package tool_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/tooltest"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// canarySecret is a secret setting's value that every encoding the masking knows changes: URL escaping (the
// slash, plus, equals, space, quote, angle brackets, ampersand), JSON escaping (the quotes; the angle brackets
// and the ampersand with HTML escaping) and base64.
const canarySecret = `sk-CANARY/4+2= "q"<&>`

// canaryManifest sends the secret setting key through every place a backend can log or fail: an mcp server's URL
// and headers (one that drops the connection, one that is gone), a stateless_http URL and a redirect, an openapi base URL and headers, an exec program's arguments,
// environment and stderr, and a poll URL. note's argument grows the allow list, whose write the Store refuses.
// DOC is the OpenAPI document's URL.
const canaryManifest = `kind: commonagents.info/v1beta2/tool
namespace: tests
name: canary
description: Sends one secret setting everywhere a backend can log or fail.
settings:
  properties:
    base: {type: string}
    gone: {type: string}
    key: {type: string, format: password}
openapi:
  url: DOC
  base_url: "{settings.base}/api/{settings.key}"
  headers:
    Authorization: "Bearer {settings.key}"
actions:
  - name: record
    description: An MCP call whose connection drops with the call in flight.
    execute:
      mcp:
        transport: streamable_http
        url: "{settings.base}/mcp/{settings.key}"
        headers:
          X-Key: "{settings.key}"
  - name: record_gone
    description: An MCP call to a server that is gone.
    execute:
      mcp:
        transport: streamable_http
        url: "{settings.gone}/mcp/{settings.key}"
        headers:
          X-Key: "{settings.key}"
        tool_name: record
  - name: post
    description: An HTTP call whose connection drops before the reply.
    execute:
      stateless_http:
        method: POST
        url: "{settings.base}/http/{settings.key}?key={settings.key}"
        headers:
          X-Key: "{settings.key}"
  - name: follow
    description: An HTTP call redirected to another host, the secret in the Location.
    execute:
      stateless_http:
        method: GET
        url: "{settings.base}/redirect/{settings.key}"
  - name: run
    description: A program that prints its argument and environment to stderr and fails.
    execute:
      exec:
        command: PROGRAM
        args: ["-test.run=^TestSecretCanaryHelperProcess$", "--", "{settings.key}"]
        env: [TOOL_CANARY_HELPER, TOOL_CANARY_KEY]
  - name: note
    description: Grows the allow list, which the Store cannot write.
    parameters:
      properties:
        text: {type: string}
    execute:
      cel:
        expression: "input.text"
events:
  - name: tick
    description: A poll whose connection drops.
    message: "tick"
    receive:
      poll:
        method: GET
        url: "{settings.base}/poll/{settings.key}"
        headers:
          X-Key: "{settings.key}"
        detect: "response.items"
        interval: "1h"
`

// canaryDocument is the OpenAPI document: one operation, createItem.
const canaryDocument = `{"openapi": "3.0.3", "info": {"title": "canary", "version": "1"},
 "paths": {"/items": {"post": {"operationId": "createItem", "responses": {"200": {"description": "ok"}}}}}}`

// TestSecretCanaryHelperProcess is the exec program of canaryManifest: it writes its argument and environment
// to stderr, raw and encoded, and fails.
func TestSecretCanaryHelperProcess(t *testing.T) {
	if os.Getenv("TOOL_CANARY_HELPER") != "1" {
		return
	}
	arg, env := os.Args[len(os.Args)-1], os.Getenv("TOOL_CANARY_KEY")
	fmt.Fprintf(os.Stderr, "arg %s env %s base64 %s escaped %s\n", arg, env,
		base64.StdEncoding.EncodeToString([]byte(env)), url.QueryEscape(arg))
	os.Exit(3)
}

// canaryStore fails the allow list's writes while failPuts is set, and every delete, with an error that holds
// the secret, raw and encoded, as a database driver's error may hold its connection string.
type canaryStore struct {
	tool.Store
	failPuts *atomic.Bool
}

var errCanaryStore = fmt.Errorf("dial postgres://tool:%s@db/tool?password=%s (%s): connection refused",
	url.PathEscape(canarySecret), url.QueryEscape(canarySecret), base64.URLEncoding.EncodeToString([]byte(canarySecret)))

func (s canaryStore) Put(ctx context.Context, key string, value []byte) error {
	if s.failPuts.Load() && strings.HasSuffix(key, "/allowlist") {
		return fmt.Errorf("put %s: %w: %s", key, errCanaryStore, canarySecret)
	}
	return s.Store.Put(ctx, key, value)
}

func (s canaryStore) Delete(ctx context.Context, key string) error {
	return fmt.Errorf("delete %s: %w", key, errCanaryStore)
}

// canaryPeer is the server of every backend: it drops the connection of each MCP tools/call, of each request
// under /http/, /api/ and /poll/, and redirects /redirect/ to another host with the secret in the Location.
func canaryPeer(t *testing.T) *httptest.Server {
	s := server.NewMCPServer("canary", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewToolWithRawSchema("record", "Records.", []byte(`{"type":"object"}`)),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("recorded"), nil
		})
	mcpHandler := server.NewStreamableHTTPServer(s)
	drop := func(w http.ResponseWriter) {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			_ = conn.Close()
		}
	}
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch first, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/"); first {
		case "mcp":
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte(`"tools/call"`)) {
				drop(w)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			mcpHandler.ServeHTTP(w, r)
		case "openapi.json":
			io.WriteString(w, canaryDocument)
		case "redirect":
			other := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
			http.Redirect(w, r, other+"/elsewhere/"+url.PathEscape(canarySecret)+"?key="+url.QueryEscape(canarySecret), http.StatusFound)
		default:
			drop(w)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// goneURL is the URL of a server that no longer listens.
func goneURL(t *testing.T) string {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	return srv.URL
}

// canaryForms are the secret in every form the masking knows: raw, URL-escaped (query, path segment, path), base64 (standard
// and URL alphabets, padded and raw) and JSON-escaped (with and without HTML escaping), each also as it reads
// inside a JSON string.
func canaryForms() []string {
	b := []byte(canarySecret)
	forms := []string{canarySecret, url.QueryEscape(canarySecret), url.PathEscape(canarySecret),
		(&url.URL{Path: canarySecret}).EscapedPath(), // a URL's path as net/url prints it, in a client's error
		base64.StdEncoding.EncodeToString(b), base64.URLEncoding.EncodeToString(b),
		base64.RawStdEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b)}
	for _, html := range []bool{true, false} {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(html)
		_ = enc.Encode(canarySecret)
		forms = append(forms, strings.Trim(strings.TrimSpace(buf.String()), `"`))
	}
	for _, f := range forms[:len(forms):len(forms)] {
		quoted, _ := json.Marshal(f)
		if q := strings.Trim(string(quoted), `"`); q != f {
			forms = append(forms, q)
		}
	}
	return forms
}

// One secret setting sent through every backend and failure path reaches no log line, fact, error or result, in
// any encoding the masking knows (SPEC §12.2).
func TestSecretSettingReachesNoChannel(t *testing.T) {
	// The exec program's environment is read from this process's: no t.Parallel.
	t.Setenv("TOOL_CANARY_HELPER", "1")
	t.Setenv("TOOL_CANARY_KEY", canarySecret)
	program, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	peer := canaryPeer(t)
	logs, obs := &logBuffer{}, tooltest.NewObserver()
	src := strings.NewReplacer("DOC", peer.URL+"/openapi.json", "PROGRAM", program).Replace(canaryManifest)

	type output struct {
		channel string // log, fact, error, result
		source  string
		text    string
	}
	var outputs []output
	addError := func(source string, err error) {
		if err != nil {
			outputs = append(outputs, output{"error", source, err.Error()}, output{"error", source, fmt.Sprintf("%+v", err)})
		}
	}

	ctx := context.Background()
	st := canaryStore{Store: tool.NewMemoryStore(), failPuts: &atomic.Bool{}}
	tl, err := tool.Load(ctx, []byte(src), tool.WithSettings(map[string]any{"base": peer.URL, "gone": goneURL(t), "key": canarySecret}),
		tool.WithLogger(logs.logger()), tool.WithObserver(obs), tool.WithStore(st))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	st.failPuts.Store(true)
	_, err = tl.NewTask(ctx, tool.TaskConfig{Sink: tooltest.NewSink()})
	if err == nil {
		t.Fatal("NewTask succeeded with a Store that cannot write the allow list")
	}
	addError("new task", err)
	st.failPuts.Store(false)
	task, err := tl.NewTask(ctx, tool.TaskConfig{Sink: tooltest.NewSink()})
	if err != nil {
		t.Fatalf("NewTask: %v", err)
	}
	st.failPuts.Store(true)
	for _, c := range []struct {
		action string
		args   map[string]any
	}{{"record", nil}, {"record_gone", nil}, {"post", nil}, {"follow", nil}, {"createItem", nil}, {"run", nil},
		{"note", map[string]any{"text": "hi"}}} {
		res, err := task.Invoke(ctx, c.action, c.args)
		addError(c.action, err)
		if c.action == "record_gone" {
			if !errors.Is(err, tool.ErrUnrecoverable) {
				t.Errorf("record_gone: %v, want an unrecoverable error", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.action, err)
		}
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatalf("%s: the result does not encode: %v", c.action, err)
		}
		outputs = append(outputs, output{"result", c.action, string(b)}, output{"result", c.action, res.Text()},
			output{"result", c.action, fmt.Sprintf("%+v", res.Error)})
		if c.action != "note" && !res.IsError {
			t.Errorf("%s succeeded: the test did not exercise its failure", c.action)
		}
	}
	obs.Wait(t, "poll.failed", 1)
	addError("close", task.Close(ctx))

	for _, f := range obs.Facts() {
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatalf("fact %s does not encode: %v", f.Name, err)
		}
		outputs = append(outputs, output{"fact", f.Name, string(b)}, output{"fact", f.Name, fmt.Sprintf("%+v", f.Data)})
	}
	logs.mu.Lock()
	for _, line := range strings.Split(strings.TrimSpace(logs.buf.String()), "\n") {
		var rec struct{ Msg string }
		_ = json.Unmarshal([]byte(line), &rec)
		outputs = append(outputs, output{"log", rec.Msg, line})
	}
	logs.mu.Unlock()

	masks := 0
	for _, o := range outputs {
		masks += strings.Count(o.text, "[redacted]")
		for _, form := range canaryForms() {
			if i := strings.Index(o.text, form); i >= 0 {
				t.Errorf("%s (%s): %q leaked: …%s…", o.channel, o.source, form,
					o.text[max(0, i-80):min(len(o.text), i+len(form)+20)])
				break
			}
		}
	}
	// The paths above really failed and were reported: otherwise the test proves nothing.
	for _, want := range []struct{ channel, source string }{
		{"log", "mcp: server connection lost with a call in flight; not sending it again"},
		{"log", "store operation failed"},
		{"fact", "poll.failed"}, {"fact", "store.failed"}, {"fact", "tool.failed"},
		{"error", "new task"}, {"error", "record_gone"}, {"error", "close"},
	} {
		found := false
		for _, o := range outputs {
			found = found || o.channel == want.channel && o.source == want.source
		}
		if !found {
			t.Errorf("no %s from %q: the test did not exercise it", want.channel, want.source)
		}
	}
	if masks < 20 {
		t.Errorf("%d masks in all the output: the test did not exercise the masking", masks)
	}
}
