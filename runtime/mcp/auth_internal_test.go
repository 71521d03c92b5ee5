package mcp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
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
