package mcpauth

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Grants lists subject's grants, without their tokens. ctx bounds the call.
func (c *Client) Grants(ctx context.Context, subject string) ([]Grant, error) {
	keys, err := c.rec.st.List(ctx, c.rec.prefix+grantDir+h("subject", subject)+"/")
	if err != nil {
		return nil, fmt.Errorf("mcpauth: listing grants: %w", err)
	}
	var out []Grant
	for _, k := range keys {
		var g grantRecord
		if _, err := c.rec.get(ctx, k, &g); err != nil || g.Subject != subject {
			continue
		}
		out = append(out, Grant{Server: g.Server, URL: g.URL, Resource: g.Resource, Issuer: g.Issuer,
			Scopes: g.Scopes, Expiry: g.Expiry, Granted: g.Granted, Refreshable: g.Refresh})
	}
	return out, nil
}

// Revoke forgets subject's grant for the server at serverURL: its record in the Store, and this replica's copy
// in memory; where the authorization server has a revocation endpoint (RFC 7009), its refresh token (else its
// access token) is revoked there first, and a failure there is returned after the grant is forgotten. Other
// replicas keep sending an access token they hold in memory until the server refuses it. ctx bounds the call.
func (c *Client) Revoke(ctx context.Context, subject, serverURL string) error {
	su, err := canonicalURL(serverURL)
	if err != nil {
		return fmt.Errorf("mcpauth: the server's url: %w", err)
	}
	key := c.grantKey(subject, su)
	var revoked error
	var g grantRecord
	if _, err := c.rec.get(ctx, key, &g); err == nil && g.Revoke != "" {
		var sec grantSecrets
		if c.rec.vault.open(key, g.Sealed, &sec) == nil {
			revoked = c.revoke(ctx, &g, sec)
		}
	}
	if err := c.rec.st.Delete(ctx, key); err != nil {
		return fmt.Errorf("mcpauth: deleting the grant: %w", err)
	}
	c.rec.vault.forget(key)
	c.mu.Lock()
	for k, e := range c.cache {
		if e.key == key {
			delete(c.cache, k)
		}
	}
	c.mu.Unlock()
	return revoked
}

// revoke asks the grant's authorization server to revoke its refresh token, else its access token (RFC 7009
// §2.1), with the client's authentication. x/oauth2 has no revocation request: it is a form POST here.
func (c *Client) revoke(ctx context.Context, g *grantRecord, sec grantSecrets) error {
	ReporterFrom(ctx).secret(sec.Access, sec.Refresh, sec.Secret)
	form := url.Values{"token": {sec.Refresh}, "token_type_hint": {"refresh_token"}}
	if sec.Refresh == "" {
		form = url.Values{"token": {sec.Access}, "token_type_hint": {"access_token"}}
	}
	basic := g.Method != "client_secret_post" && g.Method != "none" && sec.Secret != ""
	if !basic {
		form.Set("client_id", g.ClientID)
		if g.Method == "client_secret_post" {
			form.Set("client_secret", sec.Secret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.Revoke, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("mcpauth: the revocation endpoint: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic {
		req.SetBasicAuth(url.QueryEscape(g.ClientID), url.QueryEscape(sec.Secret)) // RFC 6749 §2.3.1
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("mcpauth: revoking at the authorization server: %w", safeOAuth(err))
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("mcpauth: the revocation endpoint answered %s", resp.Status)
	}
	return nil
}
