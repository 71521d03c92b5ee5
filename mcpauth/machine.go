package mcpauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/commonagents-go/tool/store"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// CrossApp configures SEP-990 cross-app access (enterprise-managed authorization): the end user's ID token from the
// enterprise identity provider is exchanged there for an identity assertion grant (RFC 8693, an ID-JAG), which the
// MCP server's authorization server takes in the JWT-bearer grant (RFC 7523) for an access token. No user step.
// The client at the authorization server is the one Config.Registered gives for its issuer and the resource.
type CrossApp struct {
	// TokenEndpoint is the identity provider's token endpoint.
	TokenEndpoint string
	// ClientID and Secret are the host's client at the identity provider (Secret "" for a public client).
	ClientID, Secret string
	// IDToken returns the end user's ID token from the identity provider: subject is Server.Subject.
	IDToken func(ctx context.Context, subject string) (string, error)
}

// The grant types of the machine-to-machine flows.
const (
	grantClientCredentials = "client_credentials"
	grantJWTBearer         = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	assertionType          = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
)

// hostSubject keys the grants of the host itself (client credentials): no end user's key can be it.
const hostSubject = "\x00host"

// supports reports whether the authorization server lists grant; an absent list is RFC 8414's default,
// authorization_code and implicit.
func supports(as *oauthex.AuthServerMeta, grant string) bool {
	if len(as.GrantTypesSupported) == 0 {
		return grant == "authorization_code"
	}
	return slices.Contains(as.GrantTypesSupported, grant)
}

// machine runs the grant that needs no user, when one applies: SEP-990 for an end user with Config.CrossApp, or
// client credentials for a pre-registered client that may use them, when the task has no end user or the
// authorization server offers no authorization_code grant. done is false when none applies.
func (c *Client) machine(ctx context.Context, s Server, su *url.URL, d *discovery, ch Challenge, current []string) (done bool, err error) {
	if c.cfg.Registered == nil {
		return false, nil
	}
	rc, ok := c.cfg.Registered(d.AS.Issuer, d.Resource)
	if !ok || !boundTo(rc, d.AS.Issuer, d.Resource) {
		return false, nil
	}
	scopes := c.scopesFor(d, ch, current)
	scopes = slices.DeleteFunc(scopes, func(s string) bool { return s == "offline_access" })
	switch {
	case c.cfg.CrossApp != nil && s.Subject != "" && supports(&d.AS, grantJWTBearer):
		return true, c.crossApp(ctx, s, su, d, rc, scopes)
	case rc.ClientCredentials && supports(&d.AS, grantClientCredentials) &&
		(s.Subject == "" || !supports(&d.AS, "authorization_code")):
		return true, c.clientCredentials(ctx, s, su, d, rc, scopes)
	}
	return false, nil
}

// clientCredentials takes a token for the host itself, shared by every task: one a replica stored since the
// refused one, else a new one from the token endpoint.
func (c *Client) clientCredentials(ctx context.Context, s Server, su *url.URL, d *discovery, rc RegisteredClient, scopes []string) error {
	rep := ReporterFrom(ctx)
	key := c.grantKey(hostSubject, su)
	k := cacheKey{s.Subject, s.URL}
	c.mu.RLock()
	seen := c.cache[k]
	c.mu.RUnlock()
	var g grantRecord
	raw, err := c.rec.get(ctx, key, &g)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("mcpauth: reading the host's grant: %w", err)
	}
	if err == nil && (seen == nil || string(seen.raw) != string(raw)) && (g.Expiry.IsZero() || c.now().Before(g.Expiry)) {
		var sec grantSecrets
		if c.rec.vault.open(key, g.Sealed, &sec) == nil {
			c.put(k, &cached{access: sec.Access, expiry: g.Expiry, raw: raw, key: key})
			authorized(ctx, s, &g, "stored")
			return nil
		}
	}
	params := url.Values{"resource": {d.Resource}}
	style := oauth2.AuthStyleInHeader
	secret := rc.Secret
	method := rc.AuthMethod
	if method == "" {
		method = pickMethod(d.AS.TokenEndpointAuthMethodsSupported, rc.Secret != "")
	}
	if rc.Key != nil {
		assertion, err := c.clientAssertion(rc, d.AS.Issuer)
		if err != nil {
			return err
		}
		rep.secret(assertion)
		params.Set("client_assertion_type", assertionType)
		params.Set("client_assertion", assertion)
		style, secret = oauth2.AuthStyleInParams, ""
	} else if method == "client_secret_post" {
		style = oauth2.AuthStyleInParams
	}
	rep.secret(secret)
	cfg := clientcredentials.Config{ClientID: rc.ClientID, ClientSecret: secret, TokenURL: d.AS.TokenEndpoint,
		Scopes: scopes, EndpointParams: params, AuthStyle: style}
	tok, err := cfg.Token(c.oauthContext(ctx))
	if err != nil {
		return fmt.Errorf("mcpauth: the client credentials grant for server %s: %w", s.Name, safeOAuth(err))
	}
	rep.secret(tok.AccessToken)
	g = grantRecord{URL: su.String(), Resource: d.Resource, Issuer: d.AS.Issuer, ClientID: rc.ClientID,
		Token: d.AS.TokenEndpoint, Method: method, Scopes: grantedScopes(tok, scopes), Expiry: c.expiry(tok),
		Server: s.Name, TaskID: s.TaskID, Granted: c.now()}
	raw, err = c.sealGrant(key, &g, grantSecrets{Access: tok.AccessToken})
	if err != nil {
		return err
	}
	if err := c.rec.st.Put(ctx, key, raw); err != nil {
		return fmt.Errorf("mcpauth: storing the host's grant: %w", err)
	}
	c.put(k, &cached{access: tok.AccessToken, expiry: g.Expiry, raw: raw, key: key})
	authorized(ctx, s, &g, "client_credentials")
	return nil
}

// crossApp runs SEP-990 for the end user: the token exchange at the identity provider, then the JWT-bearer grant
// at the authorization server. The grant is the user's, as one from the user's step.
func (c *Client) crossApp(ctx context.Context, s Server, su *url.URL, d *discovery, rc RegisteredClient, scopes []string) error {
	rep := ReporterFrom(ctx)
	xa := c.cfg.CrossApp
	if xa.IDToken == nil {
		return errors.New("mcpauth: CrossApp.IDToken is nil")
	}
	idToken, err := xa.IDToken(ctx, s.Subject)
	if err != nil {
		return fmt.Errorf("mcpauth: the end user's ID token: %w", err)
	}
	rep.secret(idToken, xa.Secret, rc.Secret)
	idp := &oauthex.ClientCredentials{ClientID: xa.ClientID}
	if xa.Secret != "" {
		idp.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: xa.Secret}
	}
	jag, err := oauthex.ExchangeToken(ctx, xa.TokenEndpoint, &oauthex.TokenExchangeRequest{
		RequestedTokenType: oauthex.TokenTypeIDJAG, Audience: d.AS.Issuer, Resource: d.Resource, Scope: scopes,
		SubjectToken: idToken, SubjectTokenType: oauthex.TokenTypeIDToken}, idp, c.http)
	if err != nil {
		return fmt.Errorf("mcpauth: the token exchange at the identity provider: %w", safeOAuth(err))
	}
	rep.secret(jag.AccessToken)
	method := rc.AuthMethod
	if method == "" {
		method = pickMethod(d.AS.TokenEndpointAuthMethodsSupported, rc.Secret != "")
	}
	cfg := oauthConfig(rc.ClientID, rc.Secret, method, "", d.AS.TokenEndpoint, "", scopes)
	opts := []oauth2.AuthCodeOption{oauth2.SetAuthURLParam("grant_type", grantJWTBearer),
		oauth2.SetAuthURLParam("assertion", jag.AccessToken), oauth2.SetAuthURLParam("resource", d.Resource)}
	if len(scopes) > 0 {
		opts = append(opts, oauth2.SetAuthURLParam("scope", strings.Join(scopes, " ")))
	}
	// Exchange with grant_type replaced: x/oauth2 has no call for an assertion grant (RFC 7523 §2.1); the empty
	// code it adds is a parameter without a value, which RFC 6749 §3.2 says to ignore.
	tok, err := cfg.Exchange(c.oauthContext(ctx), "", opts...)
	if err != nil {
		return fmt.Errorf("mcpauth: the JWT-bearer grant for server %s: %w", s.Name, safeOAuth(err))
	}
	rep.secret(tok.AccessToken, tok.RefreshToken)
	key := c.grantKey(s.Subject, su)
	g := grantRecord{Subject: s.Subject, URL: su.String(), Resource: d.Resource, Issuer: d.AS.Issuer,
		ClientID: rc.ClientID, Token: d.AS.TokenEndpoint, Method: method, Scopes: grantedScopes(tok, scopes),
		Expiry: c.expiry(tok), Refresh: tok.RefreshToken != "", Server: s.Name, TaskID: s.TaskID, Granted: c.now()}
	raw, err := c.sealGrant(key, &g, grantSecrets{Access: tok.AccessToken, Refresh: tok.RefreshToken, Secret: rc.Secret})
	if err != nil {
		return err
	}
	if err := c.rec.st.Put(ctx, key, raw); err != nil {
		return fmt.Errorf("mcpauth: storing the grant: %w", err)
	}
	c.put(cacheKey{s.Subject, s.URL}, &cached{access: tok.AccessToken, expiry: g.Expiry, issued: g.Granted, refresh: g.Refresh, raw: raw, key: key})
	authorized(ctx, s, &g, "cross_app")
	return nil
}

// clientAssertion signs a private_key_jwt client assertion (RFC 7523 §2.2, RFC 7521 §5.2): iss and sub the
// client, aud the authorization server's issuer, a minute's life, a random jti. The JWS is built here: x/oauth2's
// jws package is deprecated and signs RS256 only; ES256 wants the signature as r‖s, not ASN.1.
func (c *Client) clientAssertion(rc RegisteredClient, audience string) (string, error) {
	alg := ""
	switch k := rc.Key.Public().(type) {
	case *ecdsa.PublicKey:
		if k.Curve.Params().BitSize != 256 {
			return "", errors.New("mcpauth: private_key_jwt: ES256 needs a P-256 key")
		}
		alg = "ES256"
	case *rsa.PublicKey:
		alg = "RS256"
	default:
		return "", fmt.Errorf("mcpauth: private_key_jwt: a %T key is not supported (ECDSA P-256 or RSA)", k)
	}
	header := map[string]string{"alg": alg, "typ": "JWT"}
	if rc.KeyID != "" {
		header["kid"] = rc.KeyID
	}
	now := c.now()
	claims := map[string]any{"iss": rc.ClientID, "sub": rc.ClientID, "aud": audience, "iat": now.Unix(),
		"exp": now.Add(time.Minute).Unix(), "jti": randomString(16)}
	h, _ := json.Marshal(header)
	p, _ := json.Marshal(claims)
	input := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(p)
	digest := sha256.Sum256([]byte(input))
	sig, err := rc.Key.Sign(rand.Reader, digest[:], crypto.SHA256)
	if err != nil {
		return "", fmt.Errorf("mcpauth: private_key_jwt: signing: %w", err)
	}
	if alg == "ES256" {
		var rs struct{ R, S *big.Int }
		if _, err := asn1.Unmarshal(sig, &rs); err != nil {
			return "", fmt.Errorf("mcpauth: private_key_jwt: the signer's ECDSA signature: %w", err)
		}
		raw := make([]byte, 64)
		rs.R.FillBytes(raw[:32])
		rs.S.FillBytes(raw[32:])
		sig = raw
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}
