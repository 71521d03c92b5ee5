// Package gosdk adapts the OAuth handlers of the official MCP Go SDK (github.com/modelcontextprotocol/go-sdk/auth)
// to mcpauth.Authorizer: auth.AuthorizationCodeHandler (discovery of the protected-resource and
// authorization-server metadata, client ID metadata documents, pre-registered clients, dynamic registration, PKCE
// S256, RFC 8707 resource, scope step-up, built on go-sdk's oauthex and golang.org/x/oauth2), and extauth's
// client-credentials and enterprise handlers.
//
// It keeps one handler per end user and server, in memory, for the life of the Authorizer: grants do not survive
// the process, and a go-sdk authorization-code handler waits in Challenge until its AuthorizationCodeFetcher
// returns the code (a goroutine per pending user). That suits a command-line host, one user at a time, and the
// conformance tests; a host serving many users wants mcpauth.Client instead, durable and non-blocking. A
// fetcher that cannot wait may hand the URL to the user and return an error wrapping
// mcpauth.ErrAuthorizationRequired: the call then ends as authorization_required, and the next call starts anew.
//
// Give each handler a Client from mcpauth.Guard: the URLs it fetches are named by the server.
package gosdk

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/commonagents-go/tool/mcpauth"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
)

// Authorizer is an mcpauth.Authorizer over go-sdk handlers. It is safe for concurrent use.
type Authorizer struct {
	newHandler func(mcpauth.Server) (auth.OAuthHandler, error)
	mu         sync.Mutex
	handlers   map[key]auth.OAuthHandler
}

// key is whose grant a handler holds: the end user's, for one server URL.
type key struct{ subject, url string }

// New returns an Authorizer that asks newHandler for the handler of an end user and server the first time a
// request goes to that server for that user (s.Subject and s.URL), and keeps it.
func New(newHandler func(s mcpauth.Server) (auth.OAuthHandler, error)) *Authorizer {
	return &Authorizer{newHandler: newHandler, handlers: map[key]auth.OAuthHandler{}}
}

func (a *Authorizer) handler(s mcpauth.Server) (auth.OAuthHandler, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := key{s.Subject, s.URL}
	if h, ok := a.handlers[k]; ok {
		return h, nil
	}
	h, err := a.newHandler(s)
	if err != nil {
		return nil, fmt.Errorf("gosdk: the handler of server %s: %w", s.Name, err)
	}
	a.handlers[k] = h
	return h, nil
}

// Token returns the access token of the handler's token source, "" before the handler has one.
func (a *Authorizer) Token(ctx context.Context, s mcpauth.Server) (string, error) {
	h, err := a.handler(s)
	if err != nil {
		return "", err
	}
	ts, err := h.TokenSource(ctx)
	if err != nil || ts == nil {
		return "", safe(err)
	}
	tok, err := ts.Token()
	if err != nil {
		return "", safe(err)
	}
	return tok.AccessToken, nil
}

// Challenge runs the handler's Authorize with the challenge as the response it reads (status and
// WWW-Authenticate) and the server's URL as the refused request's.
func (a *Authorizer) Challenge(ctx context.Context, s mcpauth.Server, c mcpauth.Challenge) error {
	h, err := a.handler(s)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, http.NoBody)
	if err != nil {
		return fmt.Errorf("gosdk: the server's url: %w", err)
	}
	resp := &http.Response{StatusCode: c.Status, Status: http.StatusText(c.Status), Request: req,
		Header: http.Header{"Www-Authenticate": c.Header}, Body: http.NoBody}
	return safe(h.Authorize(ctx, req, resp))
}

// safe returns err without what a token endpoint's body may hold: an OAuth error is reduced to its code, and any
// other message to its first line (x/oauth2 quotes the body on the lines after). mcpauth's sentinels are kept.
func safe(err error) error {
	if err == nil {
		return nil
	}
	var re *oauth2.RetrieveError
	switch {
	case errors.Is(err, mcpauth.ErrAuthorizationRequired), errors.Is(err, mcpauth.ErrAccessDenied):
		return err
	case errors.As(err, &re) && re.ErrorCode == "access_denied":
		return fmt.Errorf("gosdk: %w", mcpauth.ErrAccessDenied)
	case errors.As(err, &re):
		code := re.ErrorCode
		if code == "" && re.Response != nil {
			code = re.Response.Status
		}
		return fmt.Errorf("gosdk: the token endpoint refused: %s", code)
	}
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return errors.New("gosdk: " + msg)
}

var _ mcpauth.Authorizer = (*Authorizer)(nil)
