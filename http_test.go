package tool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	tool "github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/runtime"
)

// recorded is one request as the server received it.
type recorded struct {
	Method, RequestURI, EscapedPath, Host string
	Query                                 url.Values
	Header                                http.Header
	Body                                  []byte
}

// recorder is an httptest server that records every request and answers through reply.
type recorder struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

func newRecorder(t *testing.T, reply http.HandlerFunc) *recorder {
	t.Helper()
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, recorded{Method: req.Method, RequestURI: req.RequestURI, EscapedPath: req.URL.EscapedPath(),
			Host: req.Host, Query: req.URL.Query(), Header: req.Header.Clone(), Body: body})
		r.mu.Unlock()
		req.Body = io.NopCloser(bytes.NewReader(body))
		reply(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

// URL returns the request's path and query as sent.
func (r recorded) URL() string { return r.RequestURI }

func (r *recorder) requests() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.reqs...)
}

func (r *recorder) last(t *testing.T) recorded {
	t.Helper()
	reqs := r.requests()
	if len(reqs) == 0 {
		t.Fatal("the server received no request")
	}
	return reqs[len(reqs)-1]
}

const filesManifest = `kind: commonagents.info/v1beta2/tool
namespace: tests
name: files
description: Files over HTTP.
settings:
  properties:
    base_url: {type: string}
    token: {type: string, format: password}
parameters:
  properties:
    path: {type: string}
stateless_http:
  headers:
    Authorization: "Bearer {settings.token}"
    X-Client: "tests"
actions:
  - name: get_file
    description: Reads a file.
    parameters:
      properties:
        ref: {type: string, default: main}
    execute:
      stateless_http:
        method: GET
        url: "{settings.base_url}/repos/files/{parameters.path}?ref={parameters.ref}&q=x"
        headers:
          X-Ref: "{parameters.ref}"
        response_path: "$.content"
  - name: put_file
    description: Writes a file.
    parameters:
      properties:
        content: {type: string}
        count: {type: integer}
        tags: {type: array, items: {type: string}, default: []}
    execute:
      stateless_http:
        method: PUT
        url: "{settings.base_url}/repos/files/{parameters.path}"
        body:
          content: "{parameters.content}"
          count: "{parameters.count}"
          tags: "{parameters.tags}"
          message: "Update {parameters.path} ({parameters.count})"
  - name: whoami
    description: Asks who the token belongs to.
    execute:
      stateless_http:
        method: GET
        url: "{settings.base_url}/me"
        headers:
          Authorization: "token {auth.github()}"
`

func filesTool(t *testing.T, srv *recorder, opts ...tool.Option) *tool.Tool {
	t.Helper()
	return mustLoadSrc(t, filesManifest, append([]tool.Option{tool.WithSettings(map[string]any{
		"base_url": srv.URL, "token": "sk-SECRET-123"})}, opts...)...)
}

func jsonReply(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"content": "hello", "path": %q}`, r.URL.EscapedPath())
}

func TestStatelessHTTPRequest(t *testing.T) {
	t.Parallel()
	srv := newRecorder(t, jsonReply)
	task := newTask(t, filesTool(t, srv), tool.TaskConfig{})

	res := mustInvoke(t, task, "get_file", map[string]any{"path": "docs/read me.md"})
	if res.IsError || res.Output != "hello" {
		t.Fatalf("get_file = %+v, want output hello", res)
	}
	got := srv.last(t)
	if got.Method != "GET" || got.EscapedPath != "/repos/files/docs/read%20me.md" ||
		!reflect.DeepEqual(got.Query, url.Values{"ref": {"main"}, "q": {"x"}}) {
		t.Errorf("request = %s %s, query %v", got.Method, got.RequestURI, got.Query)
	}
	if got.Header.Get("Authorization") != "Bearer sk-SECRET-123" || got.Header.Get("X-Client") != "tests" ||
		got.Header.Get("X-Ref") != "main" {
		t.Errorf("headers = %v", got.Header)
	}
	if res.ServerData["status"] != http.StatusOK {
		t.Errorf("ServerData status = %v", res.ServerData["status"])
	}
	if strings.Contains(string(res.OutputJSON), "200") {
		t.Errorf("HTTP status leaked into the output: %s", res.OutputJSON)
	}

	res = mustInvoke(t, task, "put_file", map[string]any{"path": "a.txt", "content": `"}, "admin": true, "x": "`,
		"count": 5})
	if res.IsError {
		t.Fatalf("put_file = %+v", res.Error)
	}
	got = srv.last(t)
	var body map[string]any
	dec := json.NewDecoder(bytes.NewReader(got.Body))
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil {
		t.Fatalf("body %s: %v", got.Body, err)
	}
	want := map[string]any{"content": `"}, "admin": true, "x": "`, "count": json.Number("5"), "tags": []any{},
		"message": "Update a.txt (5)"}
	if got.Method != "PUT" || !reflect.DeepEqual(body, want) {
		t.Errorf("PUT body = %#v\nwant %#v", body, want)
	}
	if ct := got.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
}

// TestStatelessHTTPInjection sends hostile LLM values: none may change the host, add a path segment "..", add
// query keys or headers, or break out of a JSON string.
// TestResponsesDecodeAsEncodingJSONDoes: a JSON response is decoded as encoding/json decodes it: escaped
// surrogate pairs are the character, integers are int64, other numbers float64 (1e0 too), and an integer beyond
// int64 keeps its digits (json.Number). Each body is one the fast decoder would get wrong on its own.
func TestResponsesDecodeAsEncodingJSONDoes(t *testing.T) {
	t.Parallel()
	bodies := map[string]string{
		"/repos/files/emoji": `{"content": {"title": "\ud83d\ude00 caf\u00e9", "n": 7, "ratio": 0.5}}`,
		"/repos/files/exp":   `{"content": {"one": 1e0, "n": 7}}`,
		"/repos/files/big":   `{"content": {"big": 123456789012345678901234567890, "n": 7}}`,
		"/repos/files/inf":   `{"content": {"huge": 1e400, "n": 7}}`,
	}
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, bodies[r.URL.Path])
	})
	task := newTask(t, filesTool(t, srv), tool.TaskConfig{})
	for path, want := range map[string]any{
		"emoji": map[string]any{"title": "😀 café", "n": int64(7), "ratio": 0.5},
		"exp":   map[string]any{"one": 1.0, "n": int64(7)},
		"big":   map[string]any{"big": json.Number("123456789012345678901234567890"), "n": int64(7)},
		"inf":   map[string]any{"huge": json.Number("1e400"), "n": int64(7)},
	} {
		res := mustInvoke(t, task, "get_file", map[string]any{"path": path})
		if res.IsError || !reflect.DeepEqual(res.Output, want) {
			t.Errorf("%s: output = %#v (error %+v), want %#v", path, res.Output, res.Error, want)
		}
	}
}

func TestStatelessHTTPInjection(t *testing.T) {
	t.Parallel()
	srv := newRecorder(t, jsonReply)
	task := newTask(t, filesTool(t, srv), tool.TaskConfig{})
	serverHost := strings.TrimPrefix(srv.URL, "http://")
	tests := []struct {
		name     string
		args     map[string]any
		refused  bool   // invalid_arguments, nothing sent
		wantPath string // the escaped path the server must see
	}{
		{"dotdot", map[string]any{"path": "../../admin"}, true, ""},
		{"dot", map[string]any{"path": "./x"}, true, ""},
		{"encoded dotdot", map[string]any{"path": "%2e%2e/admin"}, false, "/repos/files/%252e%252e/admin"},
		{"query", map[string]any{"path": "a?admin=1"}, false, "/repos/files/a%3Fadmin=1"},
		{"fragment", map[string]any{"path": "a#top"}, false, "/repos/files/a%23top"},
		{"userinfo", map[string]any{"path": "@evil.com/x"}, false, "/repos/files/@evil.com/x"},
		{"absolute url", map[string]any{"path": "http://evil.com/"}, false, "/repos/files/http://evil.com/"},
		{"backslash", map[string]any{"path": `..\..\x`}, false, "/repos/files/..%5C..%5Cx"},
		{"query value", map[string]any{"path": "a", "ref": "main&admin=true#x"}, false, "/repos/files/a"},
		{"header CRLF", map[string]any{"path": "a", "ref": "main\r\nX-Admin: 1"}, true, ""},
		{"header LF", map[string]any{"path": "a", "ref": "main\nX-Admin: 1"}, true, ""},
		{"header NUL", map[string]any{"path": "a", "ref": "main\x00"}, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(srv.requests())
			res := mustInvoke(t, task, "get_file", tc.args)
			reqs := srv.requests()
			if tc.refused {
				if !res.IsError || res.Error.Kind != runtime.KindInvalidArguments {
					t.Errorf("result = %+v, want invalid_arguments", res)
				}
				if len(reqs) != before {
					t.Errorf("a refused call still sent a request: %s", reqs[len(reqs)-1].RequestURI)
				}
				return
			}
			if res.IsError {
				t.Fatalf("result = %+v", res.Error)
			}
			got := reqs[len(reqs)-1]
			if got.Host != serverHost {
				t.Errorf("host = %q, want %q", got.Host, serverHost)
			}
			if got.EscapedPath != tc.wantPath {
				t.Errorf("path = %q, want %q", got.EscapedPath, tc.wantPath)
			}
			var keys []string
			for k := range got.Query {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if !reflect.DeepEqual(keys, []string{"q", "ref"}) {
				t.Errorf("query keys = %v (RequestURI %s)", keys, got.RequestURI)
			}
			if ref, _ := tc.args["ref"].(string); ref != "" && got.Query.Get("ref") != ref {
				t.Errorf("ref = %q, want the value intact %q", got.Query.Get("ref"), ref)
			}
			if got.Header.Get("X-Admin") != "" {
				t.Errorf("a header was injected: %v", got.Header)
			}
		})
	}
}

func TestStatelessHTTPStatus(t *testing.T) {
	t.Parallel()
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("ref") {
		case "429":
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
		case "503":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "404":
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"message": "Not Found", "echo": "`+r.Header.Get("Authorization")+`"}`)
		case "text":
			io.WriteString(w, "plain words")
		}
	})
	task := newTask(t, filesTool(t, srv), tool.TaskConfig{})
	tests := []struct {
		ref       string
		kind      string
		retryable bool
		after     time.Duration
	}{
		{"429", runtime.KindRateLimited, true, 7 * time.Second},
		{"503", runtime.KindUnavailable, true, 0},
		{"404", runtime.KindInvalidRequest, false, 0},
	}
	for _, tc := range tests {
		res := mustInvoke(t, task, "get_file", map[string]any{"path": "x", "ref": tc.ref})
		if !res.IsError || res.Error.Kind != tc.kind || res.Error.Retryable != tc.retryable || res.Error.RetryAfter != tc.after {
			t.Errorf("status %s: error = %+v, want kind %s retryable %v after %v", tc.ref, res.Error, tc.kind, tc.retryable, tc.after)
		}
		if !strings.Contains(res.Error.Message, tc.ref) {
			t.Errorf("status %s: message %q does not name the status", tc.ref, res.Error.Message)
		}
		if b, _ := json.Marshal(res); strings.Contains(string(b), "sk-SECRET-123") {
			t.Errorf("status %s: the secret token leaked into the result: %s", tc.ref, b)
		}
	}
	// A text body is the output as text; response_path over text selects nothing.
	res := mustInvoke(t, task, "get_file", map[string]any{"path": "x", "ref": "text"})
	if res.IsError || res.Output != nil {
		t.Errorf("text body = %+v (%v)", res.Output, res.Error)
	}
}

func TestStatelessHTTPUnreachableIsUnrecoverable(t *testing.T) {
	t.Parallel()
	srv := newRecorder(t, jsonReply)
	tl := filesTool(t, srv)
	srv.Close()
	task := newTask(t, tl, tool.TaskConfig{})
	_, err := task.Invoke(context.Background(), "get_file", map[string]any{"path": "x"})
	if !errors.Is(err, tool.ErrUnrecoverable) {
		t.Errorf("connection refused: err = %v, want ErrUnrecoverable", err)
	}
}

// tokens is an AuthProvider with fixed tokens per provider.
type tokens map[string]string

func (p tokens) Token(_ context.Context, provider string, _ tool.AuthRequest) (string, error) {
	if tok, ok := p[provider]; ok {
		return tok, nil
	}
	return "", fmt.Errorf("provider %s refused: its key is sk-SECRET-123", provider)
}

func TestAuthTokens(t *testing.T) {
	t.Parallel()
	srv := newRecorder(t, jsonReply)

	task := newTask(t, filesTool(t, srv, tool.WithAuth(tokens{"github": "ghs_TOKEN_456"})), tool.TaskConfig{})
	res := mustInvoke(t, task, "whoami", map[string]any{"path": "x"})
	if res.IsError {
		t.Fatalf("whoami = %+v", res.Error)
	}
	if got := srv.last(t).Header.Get("Authorization"); got != "token ghs_TOKEN_456" {
		t.Errorf("Authorization = %q", got)
	}

	before := len(srv.requests())
	task = newTask(t, filesTool(t, srv), tool.TaskConfig{})
	if _, err := task.Invoke(context.Background(), "whoami", map[string]any{"path": "x"}); !errors.Is(err, tool.ErrUnrecoverable) {
		t.Errorf("no auth provider: err = %v, want ErrUnrecoverable", err)
	}
	task = newTask(t, filesTool(t, srv, tool.WithAuth(tokens{})), tool.TaskConfig{})
	res = mustInvoke(t, task, "whoami", map[string]any{"path": "x"})
	if !res.IsError || res.Error.Kind != runtime.KindUnavailable || !res.Error.Retryable {
		t.Errorf("failing provider: %+v, want a retryable unavailable error", res.Error)
	}
	if n := len(srv.requests()); n != before {
		t.Errorf("%d request(s) sent without a token", n-before)
	}
}

// TestSecretsNeverLeak runs failing and succeeding calls whose server echoes the password setting and the auth
// token everywhere it can, and greps everything the library produced for them.
func TestSecretsNeverLeak(t *testing.T) {
	t.Parallel()
	secrets := []string{"sk-SECRET-123", "ghs_TOKEN_456"}
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		echo := r.Header.Get("Authorization")
		w.Header().Set("X-Echo", echo)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("ref") == "fail" {
			w.WriteHeader(http.StatusForbidden)
		}
		fmt.Fprintf(w, `{"content": %q, "nested": {%q: [%q]}}`, echo, echo, echo)
	})
	logs := &logBuffer{}
	logger := logs.logger()
	rec := &factRecorder{}
	tl := filesTool(t, srv, tool.WithAuth(tokens{"github": "ghs_TOKEN_456"}), tool.WithObserver(rec), tool.WithLogger(logger))
	task := newTask(t, tl, tool.TaskConfig{})

	var produced []any
	for _, call := range []struct {
		action string
		args   map[string]any
	}{
		{"get_file", map[string]any{"path": "x", "ref": "fail"}},
		{"get_file", map[string]any{"path": "x"}},
		{"whoami", map[string]any{"path": "x"}},
		{"get_file", map[string]any{"path": "x", "ref": "bad\r\nheader"}},
	} {
		res, err := task.Invoke(context.Background(), call.action, call.args)
		produced = append(produced, res, fmt.Sprint(err))
	}
	failing := newTask(t, filesTool(t, srv, tool.WithAuth(tokens{}), tool.WithObserver(rec), tool.WithLogger(logger)), tool.TaskConfig{})
	res, err := failing.Invoke(context.Background(), "whoami", map[string]any{"path": "x"})
	produced = append(produced, res, fmt.Sprint(err))
	_ = task.Close(context.Background())
	produced = append(produced, rec.all())
	dump := logs.dump(t, produced)
	for _, s := range secrets {
		if bytes.Contains(dump, []byte(s)) {
			i := bytes.Index(dump, []byte(s))
			t.Errorf("secret %q leaked: …%s…", s, dump[max(0, i-80):min(len(dump), i+40)])
		}
	}
	if !bytes.Contains(dump, []byte("[redacted]")) {
		t.Errorf("nothing was redacted: the test did not exercise the scrubbing")
	}
}

// logBuffer collects a logger's JSON lines, for tests that grep everything the library produced.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// dump is produced as JSON followed by the log lines so far.
func (l *logBuffer) dump(t *testing.T, produced any) []byte {
	t.Helper()
	out, err := json.Marshal(produced)
	if err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return append(out, l.buf.Bytes()...)
}

// TestAllowListGrowsBeforeBackend checks SPEC §6: while the server handles the request, the call's values are
// already in the allow list.
func TestAllowListGrowsBeforeBackend(t *testing.T) {
	t.Parallel()
	var task *tool.Task
	seen := make(chan map[string][]string, 1)
	srv := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		seen <- task.AllowList()
		jsonReply(w, r)
	})
	task = newTask(t, filesTool(t, srv), tool.TaskConfig{})
	mustInvoke(t, task, "put_file", map[string]any{"path": "a.txt", "content": "hi", "count": 3.0})
	got := <-seen
	for name, want := range map[string][]string{"path": {"a.txt"}, "content": {"hi"}, "count": {"3"}} {
		if !reflect.DeepEqual(got[name], want) {
			t.Errorf("allow list during the request: %s = %v, want %v (all: %v)", name, got[name], want, got)
		}
	}
}
