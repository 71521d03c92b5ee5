package mcp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/commonagents-go/tool/mcpauth"
)

// tokenOnly is an Authorizer that always has a token and counts how often it was asked.
type tokenOnly struct{ asked int }

func (a *tokenOnly) Token(context.Context, mcpauth.Server) (string, error) {
	a.asked++
	return "tok-canary", nil
}
func (a *tokenOnly) Challenge(context.Context, mcpauth.Server, mcpauth.Challenge) error {
	return errors.New("unexpected challenge")
}

// The bearer goes to the server's origin only: a request to another origin (an endpoint the server names, a
// redirect) is sent without it, and the Authorizer is not asked.
func TestAuthorizingKeepsTokensToTheirOrigin(t *testing.T) {
	t.Parallel()
	var got []string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = append(got, r.Header.Get("Authorization")) })
	home, away := httptest.NewServer(h), httptest.NewServer(h)
	t.Cleanup(home.Close)
	t.Cleanup(away.Close)
	a := &tokenOnly{}
	hc, err := authorizingClient(&http.Client{}, a, mcpauth.Server{URL: home.URL + "/mcp"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{home.URL + "/mcp", away.URL + "/mcp"} {
		resp, err := hc.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	if len(got) != 2 || got[0] != "Bearer tok-canary" || got[1] != "" || a.asked != 1 {
		t.Errorf("Authorization sent %q, the authorizer asked %d times: want the token at home only", got, a.asked)
	}
}

// An origin is compared without the scheme's default port and without regard to case.
func TestOrigin(t *testing.T) {
	t.Parallel()
	same := [][2]string{
		{"https://MCP.example.com/mcp", "https://mcp.example.com:443/other"},
		{"http://localhost/mcp", "http://LOCALHOST:80/x"},
	}
	differ := [][2]string{
		{"https://mcp.example.com/mcp", "http://mcp.example.com/mcp"},
		{"https://mcp.example.com/mcp", "https://mcp.example.com:8443/mcp"},
		{"https://mcp.example.com/mcp", "https://mcp.example.com.evil.test/mcp"},
	}
	for _, p := range same {
		if a, b := originOf(t, p[0]), originOf(t, p[1]); a != b {
			t.Errorf("%s and %s: %s ≠ %s, want one origin", p[0], p[1], a, b)
		}
	}
	for _, p := range differ {
		if originOf(t, p[0]) == originOf(t, p[1]) {
			t.Errorf("%s and %s: one origin, want two", p[0], p[1])
		}
	}
}

func originOf(t *testing.T, s string) string {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return origin(u)
}
