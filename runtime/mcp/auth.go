package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/mcpauth"
	"github.com/commonagents-go/tool/runtime"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// authorizing is the transport layer of a remote server's client when the task has an Authorizer: each request
// to the server's origin that carries no Authorization header of its own (the manifest's headers win) gets the
// Authorizer's bearer; a 401, or a 403 whose challenge says insufficient_scope, goes to the Authorizer when the
// request belongs to a call (or to the connect a call started), and the request is sent once more with the new
// token, within the call's budget of mcpauth.MaxAuthorizations. A request of no call (a session's own stream)
// gets the bearer but its refusals are left to the transport: nobody waits for it to ask a user.
type authorizing struct {
	base   http.RoundTripper
	auth   mcpauth.Authorizer
	server mcpauth.Server // without CallID, which the request's authBudget gives
	origin string         // scheme://host[:port] of the server's URL
	logger *slog.Logger
	// observe reports the facts of the task (runtime.Init.Observe); nil reports none.
	observe func(context.Context, string, map[string]any)
}

// authBudget counts the challenges one call handed to the Authorizer, on its server and on the connect it
// started; it travels in the context of the call's requests. It is safe for concurrent use.
type authBudget struct {
	callID string
	used   atomic.Int32
	// values are the call's (runtime.Call.Values): the bearers sent for it become its secrets, with their
	// encodings. nil records nothing.
	values interp.Resolver
	// call is the call's context: a challenge met by the connect the call started (which runs on the task's
	// life) still sees the call's values, so that an Authorizer can reach the call's client. nil: none.
	call context.Context
}

// callValues is a request's context (its deadline, cancellation and values) that falls back to the values of the
// call the request belongs to.
type callValues struct {
	context.Context
	call context.Context
}

func (c callValues) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.call.Value(key)
}

type budgetKey struct{}

// withBudget returns ctx carrying b, for the requests made with it; nil leaves ctx as it is.
func withBudget(ctx context.Context, b *authBudget) context.Context {
	if b == nil {
		return ctx
	}
	return context.WithValue(ctx, budgetKey{}, b)
}

// authError is a request the Authorizer did not let through: err is its error (or errAuthLimit), status the
// refusal's HTTP status, 0 when the Authorizer gave no token to begin with.
type authError struct {
	status int
	err    error
}

func (e *authError) Error() string { return "authorization: " + e.err.Error() }
func (e *authError) Unwrap() error { return e.err }

// errAuthLimit ends a call whose server refused it after the call's every authorization.
var errAuthLimit = fmt.Errorf("the server still refuses after %d authorizations", mcpauth.MaxAuthorizations)

// authorizingClient returns hc with its transport under an authorizing layer for srv; hc is a copy already.
func authorizingClient(hc *http.Client, auth mcpauth.Authorizer, srv mcpauth.Server, logger *slog.Logger,
	observe func(context.Context, string, map[string]any)) (*http.Client, error) {
	u, err := url.Parse(srv.URL)
	if err != nil {
		return nil, fmt.Errorf("parsing url: %w", err)
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	hc.Transport = &authorizing{base: base, auth: auth, server: srv, origin: origin(u), logger: logger, observe: observe}
	return hc, nil
}

// origin is u's scheme, host and port, lower-case, without the scheme's default port.
func origin(u *url.URL) string {
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	if p := u.Port(); (scheme == "https" && p == "443") || (scheme == "http" && p == "80") {
		host = strings.TrimSuffix(host, ":"+p)
	}
	return scheme + "://" + host
}

func (a *authorizing) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Authorization") != "" || origin(req.URL) != a.origin {
		// The manifest's own header wins; and a token goes to its server's origin only, whatever URL the server
		// names for its messages.
		return a.base.RoundTrip(req)
	}
	ctx := req.Context()
	budget, _ := ctx.Value(budgetKey{}).(*authBudget)
	s := a.server
	if budget != nil {
		s.CallID = budget.callID
	}
	for {
		tok, err := a.auth.Token(ctx, s)
		if err != nil {
			a.failed("token", s, err)
			return nil, closeBody(req, &authError{err: err})
		}
		r := req.Clone(ctx)
		if tok != "" {
			r.Header.Set("Authorization", "Bearer "+tok)
			if budget != nil { // a server may echo the token encoded, or the whole header: mask them in the call
				runtime.RecordSecret(budget.values, tok)
				runtime.RecordRequest(budget.values, r, nil)
			}
		}
		resp, err := a.base.RoundTrip(r)
		if err != nil || budget == nil {
			return resp, err
		}
		c, ok := challengeOf(resp)
		if !ok {
			return resp, nil
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		if budget.used.Add(1) > mcpauth.MaxAuthorizations {
			a.challenged(ctx, s, c, "limit")
			return nil, &authError{status: c.Status, err: errAuthLimit}
		}
		cctx := ctx
		if budget.call != nil {
			cctx = callValues{ctx, budget.call}
		}
		if err := a.auth.Challenge(cctx, s, c); err != nil {
			a.failed("challenge", s, err)
			a.challenged(ctx, s, c, outcome(err))
			return nil, &authError{status: c.Status, err: err}
		}
		a.challenged(ctx, s, c, "authorized")
		if req.Body != nil && req.Body != http.NoBody {
			if req.GetBody == nil {
				return nil, &authError{status: c.Status, err: errors.New("the request's body cannot be sent again")}
			}
			body, err := req.GetBody()
			if err != nil {
				return nil, fmt.Errorf("the request's body: %w", err)
			}
			req = req.Clone(ctx)
			req.Body = body
		}
	}
}

// challenged reports the fact of a challenge and what came of it.
func (a *authorizing) challenged(ctx context.Context, s mcpauth.Server, c mcpauth.Challenge, outcome string) {
	if a.observe == nil {
		return
	}
	a.observe(context.WithoutCancel(ctx), facts.MCPAuthorizationChallenged, map[string]any{"server": s.Name,
		"call_id": s.CallID, "status": c.Status, "error": c.Error, "scopes": c.Scopes, "outcome": outcome})
}

// outcome names what an Authorizer's error means for the call.
func outcome(err error) string {
	switch {
	case errors.Is(err, mcpauth.ErrAuthorizationRequired):
		return runtime.KindAuthorizationRequired
	case errors.Is(err, mcpauth.ErrAccessDenied):
		return runtime.KindAccessDenied
	}
	return "failed"
}

// failed logs an Authorizer's failure other than its two sentinels, which are outcomes, not failures.
func (a *authorizing) failed(step string, s mcpauth.Server, err error) {
	if !errors.Is(err, mcpauth.ErrAuthorizationRequired) && !errors.Is(err, mcpauth.ErrAccessDenied) {
		a.logger.Warn("mcp: the authorizer failed", "step", step, "server", s.Name, "call", s.CallID, "error", err)
	}
}

// closeBody closes the body of a request that is not sent, as a RoundTripper must.
func closeBody(req *http.Request, err error) error {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return err
}

// challengeOf returns the challenge of a 401, or of a 403 whose Bearer challenge says insufficient_scope; ok is
// false for any other answer.
func challengeOf(resp *http.Response) (c mcpauth.Challenge, ok bool) {
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		return c, false
	}
	c.Status = resp.StatusCode
	c.Header = resp.Header.Values("WWW-Authenticate")
	all, _ := oauthex.ParseWWWAuthenticate(c.Header) // a malformed header is a 401 without details
	for _, ch := range all {
		if ch.Scheme != "bearer" {
			continue
		}
		c.Error, c.ResourceMetadata = ch.Params["error"], ch.Params["resource_metadata"]
		c.Scopes = strings.Fields(ch.Params["scope"])
		break
	}
	return c, c.Status == http.StatusUnauthorized || c.Error == "insufficient_scope"
}

// authFailure is the recoverable result of a request the Authorizer did not let through, nil when err is no such
// request. Its message names the server's block, never a URL, a scope or what the Authorizer said.
func authFailure(key string, err error) *runtime.Error {
	var ae *authError
	if !errors.As(err, &ae) {
		return nil
	}
	var e *runtime.Error
	switch {
	case errors.Is(ae.err, errAuthLimit):
		e = runtime.Errorf(runtime.KindAccessDenied, "mcp: server %s still refuses access after %d authorizations",
			key, mcpauth.MaxAuthorizations)
	case errors.Is(ae.err, mcpauth.ErrAccessDenied):
		e = runtime.Errorf(runtime.KindAccessDenied, "mcp: access to server %s was denied", key)
	default:
		e = runtime.Errorf(runtime.KindAuthorizationRequired, "mcp: server %s needs the user's authorization", key)
		e.Hint = "ask the user to authorize access to this server as the application shows them, then call again"
	}
	e.Status = ae.status
	return e
}

var _ http.RoundTripper = (*authorizing)(nil)
