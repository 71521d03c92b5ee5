package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/mcpauth"
	"github.com/commonagents-go/tool/mcpauth/gosdk"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// authScenarios are the suite's auth/* client scenarios (0.1.16), each with its verdict for the mcp backend with
// the authorizer of TestHelperConformanceAuthClient (go-sdk's authorization-code handler through mcpauth/gosdk).
// A scenario that fails is listed with the reason and skipped: its subtest would only restate it. Measured
// 2026-11-29: 18 of 22 pass, as go-sdk's own everything-client; scope-retry-limit with exactly 3 authorization
// requests, the call then access_denied.
var authScenarios = []struct {
	name string
	pass bool
	why  string // why it fails
}{
	{"metadata-default", true, ""},
	{"metadata-var1", true, ""},
	{"metadata-var2", true, ""},
	{"metadata-var3", true, ""},
	{"basic-cimd", true, ""},
	{"scope-from-www-authenticate", true, ""},
	{"scope-from-scopes-supported", true, ""},
	{"scope-omitted-when-undefined", true, ""},
	{"scope-step-up", true, ""},
	{"scope-retry-limit", true, ""},
	{"token-endpoint-auth-basic", true, ""},
	{"token-endpoint-auth-post", true, ""},
	{"token-endpoint-auth-none", true, ""},
	{"pre-registration", true, ""},
	{"2025-03-26-oauth-metadata-backcompat", false, "go-sdk's metadata check refuses the issuer <origin>/oauth " +
		"found at the MCP server's own origin (issue 37's narrow rule belongs to the library's own authorizer)"},
	{"2025-03-26-oauth-endpoint-fallback", true, ""},
	// Passes, but by the suite's check only: go-sdk skips the mismatched metadata and falls back to the MCP
	// origin (its metadata, then /register, both 404), where issue 37 wants an explicit refusal and no request.
	{"resource-mismatch", true, ""},
	{"offline-access-scope", true, ""},
	{"offline-access-not-supported", true, ""},
	{"client-credentials-jwt", false, "no client-credentials grant in this client (go-sdk has no private_key_jwt)"},
	{"client-credentials-basic", false, "no client-credentials grant in this client: one configuration serves every " +
		"scenario, and the context's credentials are taken as a pre-registered client"},
	{"cross-app-access-complete-flow", false, "no SEP-990 token exchange in this client"},
}

// TestMCPConformanceClientAuth: the mcp backend, with TaskConfig.MCPAuthorizer, against the suite's OAuth-protected
// servers. The suite runs this test binary as its client (TestHelperConformanceAuthClient).
func TestMCPConformanceClientAuth(t *testing.T) {
	t.Parallel()
	conformanceSuite(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range authScenarios {
		name := "auth/" + sc.name
		t.Run(name, func(t *testing.T) {
			if !sc.pass {
				t.Skipf("fails: %s", sc.why)
			}
			command := fmt.Sprintf("env MCP_CONFORMANCE_CLIENT=%s %s -test.run=^TestHelperConformanceAuthClient$ --", name, self)
			if ok, out := scenario(t, "client", command, name); !ok {
				t.Errorf("%s fails:\n%s", name, out)
			}
		})
	}
}

// authManifest declares the scenarios' tool: a protected server refuses the listing at load.
func authManifest(url string) string {
	return `kind: commonagents.info/v1beta2/tool
namespace: conformance
name: protected
description: The tool of an OAuth-protected MCP server.
mcp:
  transport: streamable_http
  url: ` + url + `
actions:
  - name: test_tool
    description: The scenario's tool.
    parameters: {properties: {}}
    execute:
      mcp: {tool_name: test-tool}
`
}

// TestHelperConformanceAuthClient is the suite's client for the auth/* scenarios: one configuration for all of
// them. Its "user" opens the authorization URL and hands back the redirect's code without following it, as the
// suite's authorization server answers at once.
func TestHelperConformanceAuthClient(t *testing.T) {
	if os.Getenv("MCP_CONFORMANCE_CLIENT") == "" {
		t.Skip("run by TestMCPConformanceClientAuth")
	}
	serverURL := os.Args[len(os.Args)-1]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tl, err := tool.Load(ctx, []byte(authManifest(serverURL)))
	if err != nil {
		t.Fatal(err)
	}
	var given map[string]any // MCP_CONFORMANCE_CONTEXT: the credentials a scenario gives
	_ = json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &given)
	guard := mcpauth.Guard{AllowLoopback: true} // the suite's servers are on http://localhost
	authorizer := gosdk.New(func(mcpauth.Server) (auth.OAuthHandler, error) {
		cfg := &auth.AuthorizationCodeHandlerConfig{
			RedirectURL:                    "http://localhost:3000/callback",
			AuthorizationCodeFetcher:       userStep(guard),
			ClientIDMetadataDocumentConfig: &auth.ClientIDMetadataDocumentConfig{URL: "https://conformance-test.local/client-metadata.json"},
			DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
				Metadata: &oauthex.ClientRegistrationMetadata{RedirectURIs: []string{"http://localhost:3000/callback"}},
			},
			Client: guard.Client(),
		}
		id, _ := given["client_id"].(string)
		secret, _ := given["client_secret"].(string)
		if id != "" && secret != "" {
			cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: id,
				ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: secret}}
		}
		return auth.NewAuthorizationCodeHandler(cfg)
	})
	task, err := tl.NewTask(ctx, tool.TaskConfig{Subject: "conformance-user", MCPAuthorizer: authorizer})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = task.Close(ctx) }()
	res, err := task.Invoke(ctx, "test_tool", nil)
	if err != nil || res.IsError {
		t.Fatalf("test_tool: %v %s", err, res.Text())
	}
}

// userStep GETs the authorization URL through the guard without following its redirect, and reads the code,
// state and issuer from where it points.
func userStep(guard mcpauth.Guard) auth.AuthorizationCodeFetcher {
	c := guard.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
		if err != nil {
			return nil, err
		}
		resp, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		_ = resp.Body.Close()
		loc, err := url.Parse(resp.Header.Get("Location"))
		if err != nil {
			return nil, fmt.Errorf("the authorization server's redirect: %w", err)
		}
		q := loc.Query()
		return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
	}
}
