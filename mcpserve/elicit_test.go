package mcpserve_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/mcpauth"
	"github.com/commonagents-go/tool/mcpserve"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// elicitingAuthorizer asks the user of the call to open a URL whenever a server refuses a request, as a host's
// Authorizer hands its user step to mcpserve.ElicitURL, and reports what ElicitURL said.
type elicitingAuthorizer struct {
	said chan string // the action, or the error's text
}

func (elicitingAuthorizer) Token(context.Context, mcpauth.Server) (string, error) { return "", nil }

func (a elicitingAuthorizer) Challenge(ctx context.Context, _ mcpauth.Server, _ mcpauth.Challenge) error {
	action, err := mcpserve.ElicitURL(ctx, mcpserve.URLElicitation{ID: "el-1", URL: "https://gw.example/connect?l=x",
		Message: "Authorize, please."})
	if err != nil {
		action = err.Error()
	}
	a.said <- action
	if errors.Is(err, mcpserve.ErrElicitationDeferred) || action == "accept" {
		return mcpauth.ErrAuthorizationRequired
	}
	return mcpauth.ErrAccessDenied
}

// protectedGateway serves, with a task per session given auth, the action whoami of a server that refuses every
// request with 401.
func protectedGateway(t *testing.T, auth mcpauth.Authorizer) string {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}))
	t.Cleanup(up.Close)
	tl, err := tool.Load(context.Background(), []byte(`kind: commonagents.info/v1beta2/tool
namespace: tests
name: gw
description: A gateway.
mcp:
  transport: streamable_http
  url: `+up.URL+`
actions:
  - name: whoami
    description: Names the user.
    parameters: {properties: {}}
    execute:
      mcp: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	h := mcpserve.Handler(tl, func(ctx context.Context) (*tool.Task, error) {
		return tl.NewTask(ctx, tool.TaskConfig{Subject: "u1", MCPAuthorizer: auth})
	}, mcpserve.SessionConfig{ActionNames: true})
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		_ = h.Close(context.Background())
	})
	return srv.URL
}

// TestElicitURL: a host's user step reaches the call's client as a URL-mode elicitation when the client declared
// URL mode (its answer comes back to the host, and the LLM's result names no URL), and as the call's -32042 error,
// listing the elicitation, when it did not.
func TestElicitURL(t *testing.T) {
	t.Parallel()
	auth := elicitingAuthorizer{said: make(chan string, 4)}
	url := protectedGateway(t, auth)

	asked := make(chan *mcp.ElicitParams, 1)
	withURL := relayClient(t, url, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked <- req.Params
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
	})
	res := call(t, withURL, "whoami")
	if got := <-auth.said; got != "accept" {
		t.Errorf("ElicitURL with a URL-mode client said %q, want the client's accept", got)
	}
	if p := <-asked; p.Mode != "url" || p.URL != "https://gw.example/connect?l=x" || p.ElicitationID != "el-1" {
		t.Errorf("the client was asked %+v", p)
	}
	if !res.IsError || containsURL(text(res)) {
		t.Errorf("the call's result: %+v; want an authorization_required result without the URL", res)
	}

	formOnly := relayClient(t, url, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			t.Error("a form-only client was sent a URL elicitation")
			return &mcp.ElicitResult{Action: "cancel"}, nil
		},
	})
	_, err := formOnly.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	if got := <-auth.said; got != mcpserve.ErrElicitationDeferred.Error() {
		t.Errorf("ElicitURL with a form-only client said %q", got)
	}
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != -32042 || !containsURL(string(rpc.Data)) {
		t.Errorf("the call answered %v, want -32042 listing the URL", err)
	}
	if _, err := mcpserve.ElicitURL(context.Background(), mcpserve.URLElicitation{ID: "x", URL: "https://a.example"}); !errors.Is(err, mcpserve.ErrNoCall) {
		t.Errorf("ElicitURL outside a call: %v, want ErrNoCall", err)
	}
}

// containsURL reports whether s holds the elicitation's URL, as text or JSON.
func containsURL(s string) bool {
	return strings.Contains(s, "https://gw.example/connect?l=x")
}
