package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/mcpauth"
	"github.com/commonagents-go/tool/runtime"
	mcpbackend "github.com/commonagents-go/tool/runtime/mcp"
)

// machineAS is an authorization server that grants only client_credentials, to the client machine with its
// secret (client_secret_basic), the token tokBasic; grants counts what it answered.
type machineAS struct {
	srv    *httptest.Server
	mu     sync.Mutex
	grants int
	forms  []string // the resource of each token request
}

func newMachineAS(t *testing.T) *machineAS {
	a := &machineAS{}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			_ = json.NewEncoder(w).Encode(map[string]any{"issuer": a.srv.URL, "token_endpoint": a.srv.URL + "/token",
				"response_types_supported": []string{"code"}, "grant_types_supported": []string{"client_credentials"},
				"token_endpoint_auth_methods_supported": []string{"client_secret_basic"}})
		case "/token":
			_ = r.ParseForm()
			id, secret, ok := r.BasicAuth()
			if !ok || id != "machine" || secret != "machine-SECRET-5c2e" || r.PostForm.Get("grant_type") != "client_credentials" {
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = w.Write([]byte(`{"error":"invalid_client"}`))
				return
			}
			a.mu.Lock()
			a.grants++
			a.forms = append(a.forms, r.PostForm.Get("resource"))
			a.mu.Unlock()
			_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tokBasic, "token_type": "Bearer", "expires_in": 3600})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(a.srv.Close)
	return a
}

// machineRegistry returns a registry whose mcp backend authorizes load-time listings with an mcpauth.Client that
// holds the pre-registered client machine, allowed the client credentials grant when credentials is set.
func machineRegistry(t *testing.T, issuer string, credentials bool) *runtime.Registry {
	t.Helper()
	c, err := mcpauth.New(mcpauth.Config{RedirectURL: "http://127.0.0.1:1/callback",
		HTTPClient: mcpauth.Guard{AllowLoopback: true}.Client(),
		Registered: func(iss, resource string) (mcpauth.RegisteredClient, bool) {
			return mcpauth.RegisteredClient{Issuer: issuer, Resources: []string{resource}, ClientID: "machine",
				Secret: "machine-SECRET-5c2e", ClientCredentials: credentials}, iss == issuer
		}})
	if err != nil {
		t.Fatal(err)
	}
	reg := runtime.NewRegistry()
	if err := reg.Register(mcpbackend.Backend{LoadAuthorizer: c}); err != nil {
		t.Fatal(err)
	}
	return reg
}

// With a LoadAuthorizer that holds client credentials for the server, discovery at load lists a protected
// server's tools (a 401, discovery, the client credentials grant for the server's resource, the listing sent
// again), without a warning; the declared actions of a protected server get their hints the same way, and
// Rediscover lists again with the grant it holds. A client the host did not allow the grant leaves the warning.
func TestLoadAuthorizerListsAProtectedServer(t *testing.T) {
	t.Parallel()
	as := newMachineAS(t)
	p := newProtected(t, "streamable_http", "mcp:basic")
	p.issuer = as.srv.URL
	bare := "kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: protected\ndescription: d\nmcp:\n" +
		"  transport: streamable_http\n  url: " + p.url("") + "\n"
	declared := whoamiManifest("  transport: streamable_http\n  url: " + p.url("") + "\n")
	ctx := context.Background()
	reg := machineRegistry(t, as.srv.URL, true)

	tl, err := tool.Load(ctx, []byte(bare), tool.WithDiscovery(true), tool.WithRuntimes(reg))
	if err != nil {
		t.Fatal(err)
	}
	if w := tl.Warnings(); len(w) != 0 {
		t.Errorf("warnings %+v, want none", w)
	}
	if fs := tl.Functions(tool.Capability{}); len(fs) != 1 || fs[0].Action != "whoami" {
		t.Fatalf("functions %+v, want the server's whoami", fs)
	}
	if _, err := tl.Rediscover(ctx); err != nil {
		t.Errorf("Rediscover: %v", err)
	}
	dl, err := tool.Load(ctx, []byte(declared), tool.WithDiscovery(true), tool.WithRuntimes(reg))
	if err != nil {
		t.Fatal(err)
	}
	if w := dl.Warnings(); len(w) != 0 {
		t.Errorf("declared: warnings %+v, want none", w)
	}
	as.mu.Lock()
	grants, forms := as.grants, as.forms
	as.mu.Unlock()
	if grants != 1 {
		t.Errorf("%d client credentials grants, want 1 (the grant is kept for the next listings)", grants)
	}
	for _, r := range forms {
		if r != p.url("") {
			t.Errorf("the grant's resource = %q, want the server's URL %q", r, p.url(""))
		}
	}

	tl, err = tool.Load(ctx, []byte(bare), tool.WithDiscovery(true),
		tool.WithRuntimes(machineRegistry(t, as.srv.URL, false)))
	if err != nil {
		t.Fatalf("without client credentials: %v", err)
	}
	var warned bool
	for _, w := range tl.Warnings() {
		warned = warned || strings.Contains(w.Detail, "authoriz")
	}
	if !warned || len(tl.Functions(tool.Capability{})) != 0 {
		t.Errorf("without client credentials: warnings %+v, %d functions; want the authorization warning and none",
			tl.Warnings(), len(tl.Functions(tool.Capability{})))
	}
}
