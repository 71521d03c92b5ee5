package mcpauth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/commonagents-go/tool/facts"
	"golang.org/x/oauth2"
)

// randomString returns n random bytes in base64url: state values.
func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// scopesFor applies the MCP rule: the challenge's scope, else the resource metadata's scopes_supported, else
// none; with the user's current scopes on a step-up; offline_access when refresh tokens are wanted and the
// authorization server lists it.
func (c *Client) scopesFor(d *discovery, ch Challenge, current []string) []string {
	scopes := slices.Clone(ch.Scopes)
	if len(scopes) == 0 {
		scopes = slices.Clone(d.Scopes)
	}
	if ch.Status == http.StatusForbidden {
		scopes = append(scopes, current...)
	}
	if c.cfg.RefreshTokens && slices.Contains(d.AS.ScopesSupported, "offline_access") {
		scopes = append(scopes, "offline_access")
	}
	var out []string
	for _, s := range scopes {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// userStep stores a pending authorization and hands its URL to the host.
func (c *Client) userStep(ctx context.Context, s Server, su *url.URL, d *discovery, ch Challenge, current []string) error {
	if d.AS.AuthorizationEndpoint == "" || !supports(&d.AS, "authorization_code") {
		return fmt.Errorf("%w: server %s: its authorization server %s offers no authorization_code grant, and no "+
			"machine grant applies", ErrAuthorizationRequired, s.Name, d.AS.Issuer)
	}
	rep := ReporterFrom(ctx)
	id, err := c.identity(ctx, d)
	if err != nil {
		return fmt.Errorf("mcpauth: the client identity for server %s: %w", s.Name, err)
	}
	scopes := c.scopesFor(d, ch, current)
	state, verifier := randomString(32), oauth2.GenerateVerifier()
	rep.secret(state, verifier, id.secret)
	now := c.now()
	expires := now.Add(c.cfg.PendingTTL)
	pkey := c.rec.prefix + pendingDir + h("state", state)
	p := pendingRecord{Subject: s.Subject, TaskID: s.TaskID, CallID: s.CallID, Server: s.Name, URL: su.String(),
		Resource: d.Resource, Issuer: d.AS.Issuer, IssParam: d.AS.AuthorizationResponseIssParameterSupported,
		ClientID: id.id, ClientKey: id.key, Token: d.AS.TokenEndpoint, Revoke: d.AS.RevocationEndpoint,
		Method: id.method, Redirect: c.cfg.RedirectURL,
		Scopes: scopes, Refresh: slices.Contains(scopes, "offline_access"), StepUp: ch.Status == http.StatusForbidden,
		Expires: expires}
	if p.Sealed, err = c.rec.vault.seal(pkey, pendingSecrets{Verifier: verifier, Secret: id.secret}, expires); err != nil {
		return fmt.Errorf("mcpauth: sealing the pending authorization: %w", err)
	}
	raw, _ := json.Marshal(p)
	if err := c.rec.putTTL(ctx, pkey, raw, c.cfg.PendingTTL); err != nil {
		return fmt.Errorf("mcpauth: storing the pending authorization: %w", err)
	}
	cfg := oauthConfig(p.ClientID, id.secret, p.Method, d.AS.AuthorizationEndpoint, p.Token, p.Redirect, scopes)
	authURL := cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", d.Resource))
	rep.secret(authURL)
	rep.fact(facts.MCPAuthorizationRequired, map[string]any{"server": s.Name, "resource": d.Resource, "issuer": d.AS.Issuer,
		"scopes": scopes, "step_up": p.StepUp, "subject": SubjectDigest(s.Subject), "expires_at": expires})
	if c.cfg.OnAuthorization == nil {
		return fmt.Errorf("%w: no Config.OnAuthorization to hand the user's step to", ErrAuthorizationRequired)
	}
	if err := c.cfg.OnAuthorization(ctx, AuthorizationRequest{TaskID: s.TaskID, CallID: s.CallID, Subject: s.Subject,
		Server: s.Name, URL: su.String(), Resource: d.Resource, Issuer: d.AS.Issuer, Scopes: scopes, StepUp: p.StepUp,
		AuthorizationURL: authURL, Expires: expires}); err != nil {
		return fmt.Errorf("mcpauth: the host's OnAuthorization: %w", err)
	}
	// The host may have completed it already, here or on another replica.
	key := c.grantKey(s.Subject, su)
	var g grantRecord
	if _, err := c.rec.get(ctx, key, &g); err == nil && g.From == pkey {
		if e := c.load(ctx, cacheKey{s.Subject, s.URL}, key); e.access != "" {
			authorized(ctx, s, &g, "completed")
			return nil
		}
	}
	return ErrAuthorizationRequired
}

// oauthConfig is x/oauth2's configuration for a client at a token endpoint.
func oauthConfig(id, secret, method, authURL, tokenURL, redirect string, scopes []string) *oauth2.Config {
	style := oauth2.AuthStyleInHeader
	if method == "client_secret_post" || method == "none" {
		style = oauth2.AuthStyleInParams
	}
	if method == "none" {
		secret = ""
	}
	return &oauth2.Config{ClientID: id, ClientSecret: secret, RedirectURL: redirect, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: authURL, TokenURL: tokenURL, AuthStyle: style}}
}
