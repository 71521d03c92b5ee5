package mcpauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// identity is the client a Client presents to an authorization server.
type identity struct {
	id, secret, method string
	key                string // the stored registration's key, "" for others
}

// ErrNoClient: the Client has no way to identify itself to the authorization server: no client ID metadata
// document it supports, no pre-registered client for it, no dynamic registration (offered and allowed, within
// its bound).
var ErrNoClient = errors.New("mcpauth: no client identity for the authorization server")

// identity picks the client identity in the order MCP gives: the host's client ID metadata document when the
// server supports it, a client pre-registered with this issuer for this resource, a registration stored earlier,
// a dynamic registration.
func (c *Client) identity(ctx context.Context, d *discovery) (identity, error) {
	as := &d.AS
	if c.cfg.ClientMetadataURL != "" && as.ClientIDMetadataDocumentSupported {
		return identity{id: c.cfg.ClientMetadataURL, method: "none"}, nil
	}
	if c.cfg.Registered != nil {
		if rc, ok := c.cfg.Registered(as.Issuer, d.Resource); ok && boundTo(rc, as.Issuer, d.Resource) {
			m := rc.AuthMethod
			if m == "" {
				m = pickMethod(as.TokenEndpointAuthMethodsSupported, rc.Secret != "")
			}
			return identity{id: rc.ClientID, secret: rc.Secret, method: m}, nil
		}
	}
	key := c.rec.prefix + clientDir + h("issuer", as.Issuer) + "/" + h("url", c.cfg.RedirectURL)
	var rec clientRecord
	if _, err := c.rec.get(ctx, key, &rec); err == nil && rec.Issuer == as.Issuer {
		var sec clientSecrets
		if c.rec.vault.open(key, rec.Sealed, &sec) == nil {
			return identity{id: rec.ClientID, secret: sec.Secret, method: rec.Method, key: key}, nil
		}
	}
	if !c.cfg.Register || as.RegistrationEndpoint == "" {
		return identity{}, ErrNoClient
	}
	if !c.mayRegister(as.Issuer) {
		return identity{}, fmt.Errorf("%w: %d registrations with %s within the hour", ErrNoClient, c.cfg.MaxRegistrations, as.Issuer)
	}
	name := c.cfg.ClientName
	if name == "" {
		name = "commonagents-go/tool"
	}
	resp, err := oauthex.RegisterClient(ctx, as.RegistrationEndpoint, &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{c.cfg.RedirectURL}, ClientName: name,
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
	}, c.http)
	if err != nil {
		var re *oauthex.ClientRegistrationError
		if errors.As(err, &re) {
			return identity{}, fmt.Errorf("dynamic registration: the server answered %s", oauthCode(re.ErrorCode))
		}
		if errors.Is(err, ErrRefused) {
			return identity{}, fmt.Errorf("dynamic registration: %w", ErrRefused)
		}
		return identity{}, errors.New("dynamic registration failed") // its message may quote the body
	}
	m := resp.TokenEndpointAuthMethod
	if m == "" {
		m = pickMethod(nil, resp.ClientSecret != "")
	}
	ReporterFrom(ctx).secret(resp.ClientSecret)
	rec = clientRecord{Issuer: as.Issuer, ClientID: resp.ClientID, Method: m, At: c.now()}
	if rec.Sealed, err = c.rec.vault.seal(key, clientSecrets{Secret: resp.ClientSecret}, resp.ClientSecretExpiresAt); err != nil {
		return identity{}, err
	}
	if raw, err := json.Marshal(rec); err == nil {
		_ = c.rec.st.Put(ctx, key, raw) // a lost write costs a registration later
	}
	return identity{id: resp.ClientID, secret: resp.ClientSecret, method: m, key: key}, nil
}

// boundTo reports whether a pre-registered client may be presented to issuer for resource.
func boundTo(rc RegisteredClient, issuer, resource string) bool {
	if rc.ClientID == "" || strings.TrimSuffix(rc.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
		return false
	}
	ru, err := canonicalURL(resource)
	if err != nil {
		return false
	}
	for _, r := range rc.Resources {
		if covers(r, ru) {
			return true
		}
	}
	return false
}

// pickMethod chooses the token endpoint's client authentication from what the server lists (RFC 8414; an empty
// list means client_secret_basic, RFC 7591 §2).
func pickMethod(supported []string, hasSecret bool) string {
	if !hasSecret {
		return "none"
	}
	for _, m := range []string{"client_secret_basic", "client_secret_post"} {
		if len(supported) == 0 || slices.Contains(supported, m) {
			return m
		}
	}
	return "client_secret_basic"
}

// mayRegister counts a dynamic registration with issuer against the hourly bound.
func (c *Client) mayRegister(issuer string) bool {
	c.regMu.Lock()
	defer c.regMu.Unlock()
	now := c.now()
	recent := slices.DeleteFunc(c.regs[issuer], func(t time.Time) bool { return now.Sub(t) > time.Hour })
	if len(recent) >= c.cfg.MaxRegistrations {
		c.regs[issuer] = recent
		return false
	}
	c.regs[issuer] = append(recent, now)
	return true
}
