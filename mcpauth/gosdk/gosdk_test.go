package gosdk_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/commonagents-go/tool/mcpauth"
	"github.com/commonagents-go/tool/mcpauth/gosdk"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
)

// handler is a go-sdk OAuthHandler that records what Authorize was given and then holds the token "fresh", or
// fails with err.
type handler struct {
	mu   sync.Mutex
	tok  string
	err  error
	req  *http.Request
	resp *http.Response
}

func (h *handler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tok == "" {
		return nil, nil
	}
	return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: h.tok}), nil
}

func (h *handler) Authorize(_ context.Context, req *http.Request, resp *http.Response) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.req, h.resp = req, resp
	if h.err != nil {
		return h.err
	}
	h.tok = "fresh"
	return nil
}

// A challenge reaches the handler as the response it reads (status, WWW-Authenticate) to a request for the
// server's URL; the token it then holds is the bearer. One handler serves one end user and server.
func TestAuthorizerAdaptsHandler(t *testing.T) {
	t.Parallel()
	var made []mcpauth.Server
	handlers := map[string]*handler{}
	a := gosdk.New(func(s mcpauth.Server) (auth.OAuthHandler, error) {
		made = append(made, s)
		h := &handler{}
		handlers[s.Subject] = h
		return h, nil
	})
	ctx := context.Background()
	alice := mcpauth.Server{Subject: "alice", Name: "mcp", URL: "https://mcp.example.com/mcp"}
	if tok, err := a.Token(ctx, alice); tok != "" || err != nil {
		t.Fatalf("token before any authorization: %q, %v", tok, err)
	}
	c := mcpauth.Challenge{Status: 403, Error: "insufficient_scope",
		Header: []string{`Bearer error="insufficient_scope", scope="mcp:write"`}}
	if err := a.Challenge(ctx, alice, c); err != nil {
		t.Fatal(err)
	}
	h := handlers["alice"]
	if h.resp.StatusCode != 403 || !slices.Equal(h.resp.Header.Values("WWW-Authenticate"), c.Header) ||
		h.req.URL.String() != alice.URL {
		t.Errorf("the handler read %d %q for %s", h.resp.StatusCode, h.resp.Header.Values("WWW-Authenticate"), h.req.URL)
	}
	if tok, err := a.Token(ctx, alice); tok != "fresh" || err != nil {
		t.Errorf("token after the authorization: %q, %v", tok, err)
	}
	bob := alice
	bob.Subject = "bob"
	if tok, _ := a.Token(ctx, bob); tok != "" {
		t.Errorf("bob got alice's token %q", tok)
	}
	if len(made) != 2 {
		t.Errorf("%d handlers made for two users, want 2", len(made))
	}
}

// What a token endpoint answered never leaves the adapter beyond its OAuth error code; the user's refusal is
// mcpauth.ErrAccessDenied, and a fetcher's ErrAuthorizationRequired is kept.
func TestAuthorizerErrorsCarryNoBody(t *testing.T) {
	t.Parallel()
	const canary = "CANARY-refresh-token-5e1f"
	body := []byte(`{"access_token":"` + canary + `"}`)
	cases := []struct {
		name string
		err  error
		is   error
	}{
		{"body, wrapped", fmt.Errorf("exchange: %w", &oauth2.RetrieveError{Response: &http.Response{Status: "500"}, Body: body}), nil},
		{"body, quoted", fmt.Errorf("exchange: %v", &oauth2.RetrieveError{Response: &http.Response{Status: "500"}, Body: body}), nil},
		{"code", &oauth2.RetrieveError{ErrorCode: "invalid_grant", Body: body}, nil},
		{"refused", &oauth2.RetrieveError{ErrorCode: "access_denied", Body: body}, mcpauth.ErrAccessDenied},
		{"pending", fmt.Errorf("sent the link: %w", mcpauth.ErrAuthorizationRequired), mcpauth.ErrAuthorizationRequired},
	}
	for _, c := range cases {
		a := gosdk.New(func(mcpauth.Server) (auth.OAuthHandler, error) { return &handler{err: c.err}, nil })
		err := a.Challenge(context.Background(), mcpauth.Server{URL: "https://mcp.example.com/mcp"}, mcpauth.Challenge{Status: 401})
		if err == nil || strings.Contains(err.Error(), canary) {
			t.Errorf("%s: %v", c.name, err)
		}
		if c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("%s: %v, want %v", c.name, err, c.is)
		}
	}
}
