package mcpauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// ErrRefusedMetadata is wrapped by the errors of a discovery whose metadata the Client refuses to act on: a
// protected-resource metadata document for another resource (RFC 9728 §3.3), authorization-server metadata
// whose issuer is not the one asked for (RFC 8414 §3.3) outside the 2025-03-26 rule, a server without PKCE S256,
// an endpoint that is not http(s). Nothing is sent to the authorization server after it.
var ErrRefusedMetadata = errors.New("mcpauth: metadata refused")

// discovery is what a Client found out about a server: where its grants come from.
type discovery struct {
	URL      string   `json:"url"`      // the canonical server URL
	Resource string   `json:"resource"` // the RFC 8707 resource the requests name
	Scopes   []string `json:"scopes,omitempty"`
	// Legacy is set when the server has no protected-resource metadata: the 2025-03-26 discovery, where the MCP
	// server's origin is the authorization server.
	Legacy  bool                   `json:"legacy,omitempty"`
	AS      oauthex.AuthServerMeta `json:"as"`
	Fetched time.Time              `json:"fetched"`
}

// canonicalURL is u without fragment, with a lower-case scheme and host and without the scheme's default port:
// the form resources are compared and keyed in (RFC 8707 §2, RFC 3986 §6.2.2).
func canonicalURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if u.Scheme == "" || u.Host == "" {
		return nil, errors.New("not an absolute url")
	}
	c := *u
	c.Scheme, c.Host, c.Fragment, c.RawFragment, c.User = strings.ToLower(u.Scheme), strings.ToLower(u.Host), "", "", nil
	if p := c.Port(); (c.Scheme == "https" && p == "443") || (c.Scheme == "http" && p == "80") {
		c.Host = strings.TrimSuffix(c.Host, ":"+p)
	}
	return &c, nil
}

func originOf(u *url.URL) string { return u.Scheme + "://" + u.Host }

// covers reports whether the metadata's resource is the server's URL or a path prefix of it (same origin, at a
// segment boundary): RFC 9728 §3.3 as MCP applies it.
func covers(resource string, server *url.URL) bool {
	r, err := canonicalURL(resource)
	if err != nil || originOf(r) != originOf(server) || r.RawQuery != "" {
		return false
	}
	rp, sp := strings.TrimSuffix(r.EscapedPath(), "/"), strings.TrimSuffix(server.EscapedPath(), "/")
	return rp == "" || rp == sp || strings.HasPrefix(sp, rp+"/")
}

// fetchJSON GETs u through the guarded client and decodes a 200 answer into v. found is false for a 4xx answer
// (no such metadata); any other failure is an error.
func (c *Client) fetchJSON(ctx context.Context, u string, v any) (found bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := c.http.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return false, nil
	case resp.StatusCode != http.StatusOK:
		return false, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return false, fmt.Errorf("GET %s: the content type %q is not application/json", u, mt)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return false, fmt.Errorf("GET %s: %w", u, err)
	}
	return true, nil
}

// discover finds the protected-resource metadata of the server at su (from the challenge's URL, then the
// path-based well-known URL, then the root one), checks that it is for su, and the metadata of its
// authorization server; without protected-resource metadata, it takes the 2025-03-26 paths.
func (c *Client) discover(ctx context.Context, su *url.URL, ch Challenge) (*discovery, error) {
	d := &discovery{URL: su.String(), Resource: su.String(), Fetched: c.now()}
	var candidates []string
	if ch.ResourceMetadata != "" {
		candidates = append(candidates, ch.ResourceMetadata)
	}
	if p := strings.TrimSuffix(su.EscapedPath(), "/"); p != "" {
		candidates = append(candidates, originOf(su)+"/.well-known/oauth-protected-resource"+p)
	}
	candidates = append(candidates, originOf(su)+"/.well-known/oauth-protected-resource")
	var prm *oauthex.ProtectedResourceMetadata
	for _, u := range slices.Compact(candidates) {
		var m oauthex.ProtectedResourceMetadata
		found, err := c.fetchJSON(ctx, u, &m)
		if err != nil {
			return nil, fmt.Errorf("protected-resource metadata: %w", err)
		}
		if found {
			prm = &m
			break
		}
	}
	if prm == nil {
		return c.discoverLegacy(ctx, su, d)
	}
	if !covers(prm.Resource, su) {
		return nil, fmt.Errorf("%w: the protected-resource metadata is for the resource %q, not %q", ErrRefusedMetadata,
			prm.Resource, su.String())
	}
	if len(prm.AuthorizationServers) == 0 {
		return nil, fmt.Errorf("%w: the protected-resource metadata names no authorization server", ErrRefusedMetadata)
	}
	r, _ := canonicalURL(prm.Resource)
	d.Resource, d.Scopes = r.String(), prm.ScopesSupported
	issuer := prm.AuthorizationServers[0]
	as, err := c.authServerMeta(ctx, issuer)
	if err != nil {
		return nil, err
	}
	d.AS = *as
	return d, c.checkAS(d)
}

// authServerMeta fetches the metadata of the authorization server issuer: RFC 8414's well-known URL (the path
// inserted after it), then OpenID Connect's with the path inserted, then appended. The issuer it names must be
// issuer.
func (c *Client) authServerMeta(ctx context.Context, issuer string) (*oauthex.AuthServerMeta, error) {
	iu, err := url.Parse(issuer)
	if err != nil || (iu.Scheme != "https" && iu.Scheme != "http") || iu.Host == "" || iu.RawQuery != "" || iu.Fragment != "" {
		return nil, fmt.Errorf("%w: the authorization server %q is not an issuer url", ErrRefusedMetadata, issuer)
	}
	origin, p := iu.Scheme+"://"+iu.Host, strings.TrimSuffix(iu.EscapedPath(), "/")
	candidates := []string{origin + "/.well-known/oauth-authorization-server" + p,
		origin + "/.well-known/openid-configuration" + p}
	if p != "" {
		candidates = append(candidates, origin+p+"/.well-known/openid-configuration")
	}
	for _, u := range candidates {
		var m oauthex.AuthServerMeta
		found, err := c.fetchJSON(ctx, u, &m)
		if err != nil {
			return nil, fmt.Errorf("authorization-server metadata: %w", err)
		}
		if !found {
			continue
		}
		if strings.TrimSuffix(m.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
			return nil, fmt.Errorf("%w: the metadata at %s names the issuer %q, not %q", ErrRefusedMetadata, u, m.Issuer, issuer)
		}
		return &m, nil
	}
	return nil, fmt.Errorf("%w: no metadata for the authorization server %q", ErrRefusedMetadata, issuer)
}

// discoverLegacy is the 2025-03-26 discovery, for a server without protected-resource metadata: the MCP server's
// origin is the authorization server. Its metadata is read at the origin's RFC 8414 URL; without it the default
// endpoints /authorize, /token and /register at the origin are used.
//
// The issuer of metadata found there must be the origin, with one exception (the narrow rule of issue 37): an
// issuer with the same origin and a path (<origin>/oauth) is accepted, since no resource metadata names another
// authorization server and the document comes from the MCP server's own origin, which is trusted with the tokens
// anyway; that issuer is then the one the RFC 9207 check compares. An issuer of another origin is refused.
func (c *Client) discoverLegacy(ctx context.Context, su *url.URL, d *discovery) (*discovery, error) {
	d.Legacy = true
	origin := originOf(su)
	var m oauthex.AuthServerMeta
	found, err := c.fetchJSON(ctx, origin+"/.well-known/oauth-authorization-server", &m)
	if err != nil {
		return nil, fmt.Errorf("authorization-server metadata: %w", err)
	}
	if !found {
		d.AS = oauthex.AuthServerMeta{Issuer: origin, AuthorizationEndpoint: origin + "/authorize",
			TokenEndpoint: origin + "/token", RegistrationEndpoint: origin + "/register"}
		return d, c.checkAS(d)
	}
	iu, err := canonicalURL(m.Issuer)
	if err != nil || originOf(iu) != origin || iu.RawQuery != "" {
		return nil, fmt.Errorf("%w: the metadata at the server's origin names the issuer %q, of another origin",
			ErrRefusedMetadata, m.Issuer)
	}
	d.AS = m
	return d, c.checkAS(d)
}

// checkAS refuses metadata the Client cannot use safely: endpoints that are not http(s), a server of the
// authorization_code grant without PKCE S256 (except on the 2025-03-26 paths, which predate the requirement: S256
// is sent anyway). A server of machine grants only needs no authorization endpoint and no PKCE.
func (c *Client) checkAS(d *discovery) error {
	for name, u := range map[string]string{"authorization_endpoint": d.AS.AuthorizationEndpoint,
		"token_endpoint": d.AS.TokenEndpoint, "registration_endpoint": d.AS.RegistrationEndpoint,
		"revocation_endpoint": d.AS.RevocationEndpoint} {
		if u == "" && name != "token_endpoint" && (name != "authorization_endpoint" || !supports(&d.AS, "authorization_code")) {
			continue // RFC 8414: no authorization endpoint for a server of machine grants only
		}
		pu, err := url.Parse(u)
		if err != nil || (pu.Scheme != "https" && pu.Scheme != "http") || pu.Host == "" {
			return fmt.Errorf("%w: the %s %q is not an http(s) url", ErrRefusedMetadata, name, u)
		}
	}
	if !d.Legacy && supports(&d.AS, "authorization_code") && !slices.Contains(d.AS.CodeChallengeMethodsSupported, "S256") {
		return fmt.Errorf("%w: the authorization server %q does not support PKCE S256", ErrRefusedMetadata, d.AS.Issuer)
	}
	return nil
}
