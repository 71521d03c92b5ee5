package mcp_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sync/atomic"
	"testing"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/mcpauth"
	"github.com/commonagents-go/tool/store"
	"github.com/commonagents-go/tool/store/postgres"
)

// countingStore counts the Gets that reach its Store.
type countingStore struct {
	store.SwapStore
	gets atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, key string) ([]byte, error) {
	c.gets.Add(1)
	return c.SwapStore.Get(ctx, key)
}

// benchAS is a minimal authorization server for the benchmark's one authorization: the protected-resource
// metadata of resource, RFC 8414 metadata, an authorization endpoint that redirects at once, a token endpoint.
func benchAS(b *testing.B, resource string) *httptest.Server {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/prm":
			_ = json.NewEncoder(w).Encode(map[string]any{"resource": resource, "authorization_servers": []string{srv.URL}})
		case "/.well-known/oauth-authorization-server":
			_ = json.NewEncoder(w).Encode(map[string]any{"issuer": srv.URL, "authorization_endpoint": srv.URL + "/authorize",
				"token_endpoint": srv.URL + "/token", "code_challenge_methods_supported": []string{"S256"}})
		case "/authorize":
			q := r.URL.Query()
			http.Redirect(w, r, q.Get("redirect_uri")+"?"+url.Values{"code": {"c"}, "state": {q.Get("state")}}.Encode(), http.StatusFound)
		case "/token":
			_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "tok-bench", "token_type": "Bearer", "expires_in": 86400})
		default:
			http.NotFound(w, r)
		}
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkAuthorizedCallClient compares a call whose bearer mcpauth.Client gives, its grant in a PostgreSQL
// Store (TOOL_TEST_POSTGRES_DSN; else the memory store) and its token cached in memory, with one whose
// Authorization header the manifest renders from an AuthProvider, on the same streamable HTTP server (issue 37's
// bound: at most 1.05×). store-gets/op counts the Store reads per call after the first: the token is served from
// memory.
func BenchmarkAuthorizedCallClient(b *testing.B) {
	httpURL, _ := remoteServer(b, "-http")
	block := "  transport: streamable_http\n  url: " + httpURL + "\n"
	provider := authFunc(func(context.Context, string, tool.AuthRequest) (string, error) { return "tok-bench", nil })
	ctx := context.Background()
	var base store.Store = store.NewMemory()
	if dsn := os.Getenv("TOOL_TEST_POSTGRES_DSN"); dsn != "" {
		pg, err := postgres.Open(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = pg.Close() })
		base = pg
	}
	st := &countingStore{SwapStore: base.(store.SwapStore)}
	as := benchAS(b, httpURL)
	guard := mcpauth.Guard{AllowLoopback: true}
	var client *mcpauth.Client
	client, err := mcpauth.New(mcpauth.Config{
		RedirectURL: "http://localhost/callback", Store: st, KeyPrefix: "bench/" + b.Name() + "/",
		HTTPClient: guard.Client(),
		Registered: func(issuer, resource string) (mcpauth.RegisteredClient, bool) {
			return mcpauth.RegisteredClient{Issuer: issuer, Resources: []string{resource}, ClientID: "bench"}, true
		},
		OnAuthorization: func(ctx context.Context, r mcpauth.AuthorizationRequest) error {
			c := guard.Client()
			c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			resp, err := c.Get(r.AuthorizationURL)
			if err != nil {
				return err
			}
			_ = resp.Body.Close()
			loc, _ := url.Parse(resp.Header.Get("Location"))
			_, err = client.CompleteAuthorization(ctx, loc.Query(), r.Subject)
			return err
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	srv := mcpauth.Server{Subject: "user", Name: "mcp", URL: httpURL}
	if err := client.Challenge(ctx, srv, mcpauth.Challenge{Status: http.StatusUnauthorized, ResourceMetadata: as.URL + "/prm"}); err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name  string
		block string
		cfg   tool.TaskConfig
	}{
		{"header", block + "  headers:\n    Authorization: \"Bearer {auth.bench()}\"\n", tool.TaskConfig{}},
		{"client", block, tool.TaskConfig{Subject: "user", MCPAuthorizer: client}},
	}
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
			gets := st.gets.Load()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				res, err := task.Invoke(ctx, "echo", args)
				if err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
			b.ReportMetric(float64(st.gets.Load()-gets)/float64(b.N), "store-gets/op")
		})
	}
}
