package mcp_test

// Tests of the authorizer seam (package mcpauth): the bearer of the task's Authorizer on every request to a
// remote server, its challenges handed over and answered by sending the request once more, and the recoverable
// results of an authorization a person must give, or refuses.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/commonagents-go/tool"
	factsPkg "github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/mcpauth"
	"github.com/commonagents-go/tool/runtime"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The tokens of the tests' authorization server, and the scopes each grants.
const (
	tokBasic = "tok-basic-SECRET-4b1d"
	tokWrite = "tok-write-SECRET-9f3e"
	tokOther = "tok-other-SECRET-77aa"
)

var scopesOf = map[string][]string{
	tokBasic: {"mcp:basic"},
	tokWrite: {"mcp:basic", "mcp:write"},
	tokOther: {"mcp:basic"},
}

// protected is a real MCP server (mcp-go's, streamable HTTP or SSE) behind an OAuth resource server: a request
// without a known bearer gets 401 with a Bearer challenge naming its resource metadata, and a tools/call whose
// token lacks the scope the server wants gets 403 insufficient_scope. Its tool whoami answers with the bearer
// it was called with, as a careless server might.
type protected struct {
	srv      *httptest.Server
	want     string       // the scope tools/call needs
	calls    atomic.Int32 // tools/call requests received, refused or not
	mu       sync.Mutex
	bearers  []string // the bearer of each tools/call that went through
	metadata string   // the resource_metadata URL of its challenges
	// issuer, when set, is the authorization server its protected-resource metadata names (served at metadata);
	// unset, the metadata is refused like any request without a bearer.
	issuer string
}

type bearerKey struct{}

func newProtected(t *testing.T, transport, want string) *protected {
	t.Helper()
	p := &protected{want: want}
	s := server.NewMCPServer("protected", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewToolWithRawSchema("whoami", "Says who called.", []byte(`{"type":"object"}`)),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			b, _ := ctx.Value(bearerKey{}).(string)
			return mcp.NewToolResultText("called with " + b + " (" + base64.StdEncoding.EncodeToString([]byte(b)) +
				", " + base64.StdEncoding.EncodeToString([]byte("Bearer "+b)) + ")"), nil
		})
	withBearer := func(ctx context.Context, r *http.Request) context.Context {
		return context.WithValue(ctx, bearerKey{}, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	}
	p.srv = httptest.NewUnstartedServer(nil)
	var h http.Handler
	path := "/mcp"
	if transport == "sse" {
		path = "/sse"
		h = server.NewSSEServer(s, server.WithBaseURL("http://"+p.srv.Listener.Addr().String()),
			server.WithSSEContextFunc(withBearer))
	} else {
		h = server.NewStreamableHTTPServer(s, server.WithHTTPContextFunc(withBearer))
	}
	p.metadata = "http://" + p.srv.Listener.Addr().String() + "/.well-known/oauth-protected-resource" + path
	p.srv.Config.Handler = p.gate(h)
	p.srv.Start()
	t.Cleanup(p.srv.Close)
	return p
}

func (p *protected) url(transport string) string {
	if transport == "sse" {
		return p.srv.URL + "/sse"
	}
	return p.srv.URL + "/mcp"
}

func (p *protected) gate(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if r.Body != nil {
			body, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		isCall := bytes.Contains(body, []byte(`"tools/call"`))
		if isCall {
			p.calls.Add(1)
		}
		if p.issuer != "" && strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource") {
			resource := p.srv.URL + strings.TrimPrefix(r.URL.Path, "/.well-known/oauth-protected-resource")
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"resource": resource, "authorization_servers": []string{p.issuer}})
			return
		}
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		scopes, known := scopesOf[tok]
		switch {
		case !known:
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(
				`Bearer error="invalid_token", resource_metadata="%s", scope="mcp:basic"`, p.metadata))
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		case isCall && !slices.Contains(scopes, p.want):
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(
				`Bearer error="insufficient_scope", scope="mcp:basic %s", resource_metadata="%s"`, p.want, p.metadata))
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		if isCall {
			p.mu.Lock()
			p.bearers = append(p.bearers, tok)
			p.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})
}

// grants is the host's Authorizer of the tests: Token gives its current token; each challenge takes the next of
// its tokens, and when none is left answers with outcome.
type grants struct {
	mu         sync.Mutex
	token      string
	next       []string
	outcome    error
	tokenCalls int
	servers    []mcpauth.Server
	challenges []mcpauth.Challenge
}

func (g *grants) Token(_ context.Context, s mcpauth.Server) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tokenCalls++
	g.servers = append(g.servers, s)
	return g.token, nil
}

func (g *grants) Challenge(_ context.Context, s mcpauth.Server, c mcpauth.Challenge) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.servers = append(g.servers, s)
	g.challenges = append(g.challenges, c)
	if len(g.next) == 0 {
		return g.outcome
	}
	g.token, g.next = g.next[0], g.next[1:]
	return nil
}

func (g *grants) seen() ([]mcpauth.Challenge, []mcpauth.Server) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.challenges), slices.Clone(g.servers)
}

func (g *grants) set(token string) {
	g.mu.Lock()
	g.token = token
	g.mu.Unlock()
}

// whoamiManifest binds the action whoami to server (YAML lines indented by two).
func whoamiManifest(server string) string {
	return "kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: protected\ndescription: A protected server.\n" +
		"mcp:\n" + server + "actions:\n  - name: whoami\n    description: Says who called.\n" +
		"    parameters:\n      properties: {}\n    execute:\n      mcp: {}\n"
}

func authTask(t *testing.T, src string, a mcpauth.Authorizer, opts ...tool.Option) *tool.Task {
	t.Helper()
	task, err := load(t, src, opts...).NewTask(context.Background(),
		tool.TaskConfig{Subject: "user-7", MCPAuthorizer: a})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = task.Close(context.Background()) })
	return task
}

// A server that answers initialize with 401 and the call with 403 insufficient_scope is authorized twice within
// one call, each time with the challenge it gave, and the call runs once with the wider token. The Authorizer
// learns the task, the call, the end user, the server block and its URL; the token the server echoes is masked.
func TestAuthorizerAnswersChallenges(t *testing.T) {
	t.Parallel()
	for _, tr := range []string{"streamable_http", "sse"} {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			p := newProtected(t, tr, "mcp:write")
			g := &grants{next: []string{tokBasic, tokWrite}}
			task := authTask(t, whoamiManifest("  transport: "+tr+"\n  url: "+p.url(tr)+"\n"), g)
			res, err := task.Invoke(context.Background(), "whoami", nil)
			if err != nil || res.IsError {
				t.Fatalf("call: %v %+v", err, res.Error)
			}
			if out := fmt.Sprint(res.Output); strings.Contains(out, "SECRET") || !strings.Contains(out, "called with") {
				t.Errorf("output %q: want the echoed token masked", out)
			}
			challenges, servers := g.seen()
			if len(challenges) != 2 {
				t.Fatalf("%d challenges, want 2 (401 at connect, 403 on the call): %+v", len(challenges), challenges)
			}
			if c := challenges[0]; c.Status != 401 || c.Error != "invalid_token" || c.ResourceMetadata != p.metadata ||
				!slices.Equal(c.Scopes, []string{"mcp:basic"}) || len(c.Header) != 1 {
				t.Errorf("first challenge %+v", c)
			}
			if c := challenges[1]; c.Status != 403 || c.Error != "insufficient_scope" || c.ResourceMetadata != p.metadata ||
				!slices.Equal(c.Scopes, []string{"mcp:basic", "mcp:write"}) {
				t.Errorf("second challenge %+v", c)
			}
			want := mcpauth.Server{TaskID: task.ID(), CallID: res.CallID, Subject: "user-7", Name: "mcp", URL: p.url(tr)}
			for _, s := range servers {
				if s != want && s.CallID != "" { // the session's own stream belongs to no call
					t.Errorf("the authorizer was told %+v, want %+v", s, want)
				}
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			if !slices.Equal(p.bearers, []string{tokWrite}) {
				t.Errorf("the server ran tools/call with %q, want once with the write token", p.bearers)
			}
		})
	}
}

// An authorization that waits for the user is a recoverable authorization_required result that names neither
// the metadata URL nor anything the server said; nothing remembers it, and once the user has authorized, the
// next call goes through. The user refusing is access_denied, not remembered either.
func TestAuthorizationRequiredIsRecoverable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		outcome error
		kind    string
	}{
		{mcpauth.ErrAuthorizationRequired, runtime.KindAuthorizationRequired},
		{fmt.Errorf("pending for user-7: %w", mcpauth.ErrAuthorizationRequired), runtime.KindAuthorizationRequired},
		{mcpauth.ErrAccessDenied, runtime.KindAccessDenied},
		{errors.New("the authorization server is down"), runtime.KindAuthorizationRequired},
	}
	for _, c := range cases {
		t.Run(c.outcome.Error(), func(t *testing.T) {
			t.Parallel()
			p := newProtected(t, "streamable_http", "mcp:basic")
			g := &grants{outcome: c.outcome}
			task := authTask(t, whoamiManifest("  transport: streamable_http\n  url: "+p.url("")+"\n"), g)
			for range 2 {
				res, err := task.Invoke(context.Background(), "whoami", nil)
				if err != nil {
					t.Fatalf("the task ended: %v", err)
				}
				if !res.IsError || res.Error.Kind != c.kind {
					t.Fatalf("result %+v, want %s", res.Error, c.kind)
				}
				if text := res.Text(); strings.Contains(text, "well-known") || strings.Contains(text, p.srv.URL) ||
					strings.Contains(text, "mcp:basic") || strings.Contains(text, "user-7") {
					t.Errorf("the LLM would see %s", text)
				}
			}
			if challenges, _ := g.seen(); len(challenges) != 2 {
				t.Fatalf("%d challenges for 2 calls, want each call to ask again", len(challenges))
			}
			g.set(tokBasic) // the user authorized; the host's authorizer now holds a token
			res, err := task.Invoke(context.Background(), "whoami", nil)
			if err != nil || res.IsError {
				t.Fatalf("the call after the authorization: %v %+v", err, res.Error)
			}
		})
	}
}

// A server that refuses every new token is authorized at most mcpauth.MaxAuthorizations times in one call, the
// connect's authorization included, and the call ends as access_denied.
func TestAuthorizationsPerCallAreBounded(t *testing.T) {
	t.Parallel()
	p := newProtected(t, "streamable_http", "mcp:admin") // no token has it
	g := &grants{next: []string{tokBasic, tokOther, tokBasic, tokOther, tokBasic}}
	obs := &facts{}
	task := authTask(t, whoamiManifest("  transport: streamable_http\n  url: "+p.url("")+"\n"), g, tool.WithObserver(obs))
	res, err := task.Invoke(context.Background(), "whoami", nil)
	if err != nil || !res.IsError || res.Error.Kind != runtime.KindAccessDenied {
		t.Fatalf("result %v %+v, want access_denied", err, res.Error)
	}
	var outcomes []string
	for _, f := range obs.named(factsPkg.MCPAuthorizationChallenged) {
		if f.Data["call_id"] != res.CallID || f.Data["server"] != "mcp" {
			t.Errorf("fact %+v: want the call %s on server mcp", f.Data, res.CallID)
		}
		outcomes = append(outcomes, fmt.Sprint(f.Data["status"], " ", f.Data["outcome"]))
	}
	if want := []string{"401 authorized", "403 authorized", "403 authorized", "403 limit"}; !slices.Equal(outcomes, want) {
		t.Errorf("challenge facts %q, want %q", outcomes, want)
	}
	if challenges, _ := g.seen(); len(challenges) != mcpauth.MaxAuthorizations {
		t.Errorf("%d authorizations, want %d", len(challenges), mcpauth.MaxAuthorizations)
	}
	if n := p.calls.Load(); n != mcpauth.MaxAuthorizations {
		t.Errorf("tools/call sent %d times, want %d (once, then once per authorization of the call)", n,
			mcpauth.MaxAuthorizations)
	}
}

// A server block whose headers set Authorization keeps it: the Authorizer is never asked.
func TestManifestAuthorizationWins(t *testing.T) {
	t.Parallel()
	p := newProtected(t, "streamable_http", "mcp:write")
	g := &grants{token: tokBasic}
	src := whoamiManifest("  transport: streamable_http\n  url: " + p.url("") + "\n  headers:\n" +
		"    Authorization: \"Bearer {auth.demo()}\"\n")
	auth := tool.WithAuth(authFunc(func(context.Context, string, tool.AuthRequest) (string, error) { return tokWrite, nil }))
	task := authTask(t, src, g, auth)
	res, err := task.Invoke(context.Background(), "whoami", nil)
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res.Error)
	}
	if _, servers := g.seen(); len(servers) != 0 {
		t.Errorf("the authorizer was asked %d times, want never", len(servers))
	}
}

type authFunc func(context.Context, string, tool.AuthRequest) (string, error)

func (f authFunc) Token(ctx context.Context, provider string, r tool.AuthRequest) (string, error) {
	return f(ctx, provider, r)
}

// With discovery at load, a protected top-level server is a warning, not a load failure (there is no end user to
// authorize for at load); declared actions on a protected server stay, with a warning for their hints.
func TestLoadWarnsForProtectedServer(t *testing.T) {
	t.Parallel()
	p := newProtected(t, "streamable_http", "mcp:basic")
	bare := "kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: protected\ndescription: d\nmcp:\n" +
		"  transport: streamable_http\n  url: " + p.url("") + "\n"
	declared := whoamiManifest("  transport: streamable_http\n  url: " + p.url("") + "\n")
	for name, src := range map[string]string{"expanded": bare, "declared": declared} {
		tl, err := tool.Load(context.Background(), []byte(src), tool.WithDiscovery(true))
		if err != nil {
			t.Fatalf("%s: load failed: %v", name, err)
		}
		var warned bool
		for _, w := range tl.Warnings() {
			warned = warned || strings.Contains(w.Detail, "authoriz")
		}
		if !warned {
			t.Errorf("%s: warnings %+v, want one about authorization", name, tl.Warnings())
		}
		if name == "declared" {
			task := authTask(t, src, &grants{token: tokBasic}, tool.WithDiscovery(true))
			if res, err := task.Invoke(context.Background(), "whoami", nil); err != nil || res.IsError {
				t.Errorf("the declared action after a warned load: %v %+v", err, res.Error)
			}
		}
	}
}

// The tokens an Authorizer gives appear in no result, fact or log line of the task, even when the server echoes
// them, raw or in base64 (the token, or the whole Authorization value), on the way to the grant and after it.
func TestAuthorizerTokensStayOutOfChannels(t *testing.T) {
	t.Parallel()
	p := newProtected(t, "streamable_http", "mcp:write")
	g := &grants{next: []string{tokBasic, tokWrite}}
	var logs bytes.Buffer
	var logMu sync.Mutex
	obs := &facts{}
	logger := slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	task := authTask(t, whoamiManifest("  transport: streamable_http\n  url: "+p.url("")+"\n"), g,
		tool.WithLogger(logger), tool.WithObserver(obs))
	var seen []string
	for range 2 {
		res, err := task.Invoke(context.Background(), "whoami", nil)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, res.Text(), fmt.Sprint(res.ServerData))
	}
	_ = task.Close(context.Background())
	obs.mu.Lock()
	for _, f := range obs.all {
		seen = append(seen, fmt.Sprint(f.Data))
	}
	obs.mu.Unlock()
	logMu.Lock()
	seen = append(seen, logs.String())
	logMu.Unlock()
	var forms []string
	for _, tok := range []string{tokBasic, tokWrite} {
		forms = append(forms, tok, base64.StdEncoding.EncodeToString([]byte(tok)),
			base64.StdEncoding.EncodeToString([]byte("Bearer "+tok)))
	}
	for _, s := range seen {
		for _, f := range forms {
			if strings.Contains(s, f) {
				t.Errorf("a token escaped as %s: %s", f, s)
			}
		}
	}
	if !strings.Contains(seen[0], "called with") {
		t.Errorf("first result %s: want the server's answer, masked", seen[0])
	}
}

// lockedWriter serialises the writes of a log handler that the backends' goroutines share.
type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
