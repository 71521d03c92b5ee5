package resource

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// algorithms are the signature algorithms a JWT access token may use: asymmetric ones only. "none" and the HMAC
// algorithms are never accepted: a resource that held an HMAC key could mint tokens itself.
var algorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

// claims are the JWT claims a token is checked for, beyond the registered ones.
type claims struct {
	Scope string `json:"scope"`
	// Scp is the scope as some issuers write it: a list (Okta, Microsoft Entra).
	Scp []string `json:"scp"`
}

// Verify checks token and returns who it was issued to. A JWT is checked against its issuer's keys; any other
// token goes to the introspection endpoint, when there is one. The error wraps ErrInvalidToken when the token is
// refused, and never quotes it.
//
// A token that passed is remembered, by its digest, until its exp: its next requests cost a hash, not a
// signature check. A key the issuer withdraws meanwhile does not end them (a JWT cannot be revoked either).
func (s *Server) Verify(ctx context.Context, token string) (User, error) {
	d := tokenDigest(token)
	if u, ok := s.verified.get(d, s.cfg.Now().Add(-s.cfg.Leeway)); ok {
		return u, nil
	}
	u, err := s.verify(ctx, token)
	if err == nil {
		s.verified.put(d, u)
	}
	return u, err
}

func (s *Server) verify(ctx context.Context, token string) (User, error) {
	if strings.Count(token, ".") != 2 {
		if s.cfg.Introspection == nil {
			return User{}, fmt.Errorf("%w: not a JWT, and no introspection endpoint", ErrInvalidToken)
		}
		return s.introspect(ctx, token)
	}
	tok, err := jwt.ParseSigned(token, algorithms)
	if err != nil {
		return User{}, fmt.Errorf("%w: not a JWS of an accepted algorithm", ErrInvalidToken)
	}
	h := tok.Headers[0]
	if typ, ok := h.ExtraHeaders[jose.HeaderType].(string); ok && !strings.EqualFold(typ, "at+jwt") &&
		!strings.EqualFold(typ, "application/at+jwt") {
		return User{}, fmt.Errorf("%w: typ %q is not at+jwt", ErrInvalidToken, typ)
	}
	var unverified jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return User{}, fmt.Errorf("%w: its claims do not decode", ErrInvalidToken)
	}
	iss := s.issuers[unverified.Issuer] // only to choose the keys: the signature decides
	if iss == nil {
		return User{}, fmt.Errorf("%w: not issued by an accepted issuer", ErrInvalidToken)
	}
	key, err := iss.key(ctx, h.KeyID, h.Algorithm)
	if err != nil {
		return User{}, err
	}
	var std jwt.Claims
	var extra claims
	if err := tok.Claims(key, &std, &extra); err != nil {
		return User{}, fmt.Errorf("%w: the signature does not verify", ErrInvalidToken)
	}
	if std.Expiry == nil {
		return User{}, fmt.Errorf("%w: no exp", ErrInvalidToken)
	}
	if std.Subject == "" {
		return User{}, fmt.Errorf("%w: no sub", ErrInvalidToken)
	}
	if !oauthex.MatchesResource(std.Audience, s.cfg.Resource) {
		return User{}, fmt.Errorf("%w: aud does not name this resource", ErrInvalidToken)
	}
	exp := jwt.Expected{Issuer: iss.id, Time: s.cfg.Now()}
	if err := std.ValidateWithLeeway(exp, s.cfg.Leeway); err != nil {
		return User{}, fmt.Errorf("%w: %v", ErrInvalidToken, err) // go-jose's messages name the claim only
	}
	scopes := strings.Fields(extra.Scope)
	if len(scopes) == 0 {
		scopes = extra.Scp
	}
	return User{Issuer: iss.id, Subject: std.Subject, Scopes: scopes, Expiry: std.Expiry.Time()}, nil
}

// issuer is an accepted authorization server and its key set, fetched on first use and again for an unknown
// key id, at most once per RefetchInterval.
type issuer struct {
	id string
	s  *Server

	mu      sync.Mutex
	keys    []jose.JSONWebKey
	fetched time.Time // when keys were last fetched (or failed to be)
}

// key returns the issuer's public key for kid that fits alg. The lock is not held while the key set is fetched:
// a request whose key is known never waits for a fetch.
func (i *issuer) key(ctx context.Context, kid, alg string) (any, error) {
	i.mu.Lock()
	if k := findKey(i.keys, kid, alg); k != nil {
		i.mu.Unlock()
		return k, nil
	}
	now := i.s.cfg.Now()
	if since := now.Sub(i.fetched); !i.fetched.IsZero() && since < i.s.cfg.RefetchInterval {
		i.mu.Unlock()
		return nil, fmt.Errorf("%w: no key of the issuer has kid %q (its key set was fetched %s ago)", ErrInvalidToken,
			kid, since.Round(time.Second))
	}
	i.fetched = now
	i.mu.Unlock()
	keys, err := i.fetch(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: the key set of issuer %s: %v", ErrInvalidToken, i.id, err)
	}
	i.mu.Lock()
	i.keys = keys
	i.mu.Unlock()
	if k := findKey(keys, kid, alg); k != nil {
		return k, nil
	}
	return nil, fmt.Errorf("%w: no key of the issuer has kid %q for %s", ErrInvalidToken, kid, alg)
}

// findKey returns the public key of keys with kid ("" matches a key set of one key) that alg can use.
func findKey(keys []jose.JSONWebKey, kid, alg string) any {
	var found []jose.JSONWebKey
	for _, k := range keys {
		if k.KeyID == kid || kid == "" {
			found = append(found, k)
		}
	}
	if len(found) != 1 || (found[0].Algorithm != "" && found[0].Algorithm != alg) {
		return nil
	}
	switch key := found[0].Key.(type) {
	case *rsa.PublicKey:
		if strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS") {
			return key
		}
	case *ecdsa.PublicKey:
		if strings.HasPrefix(alg, "ES") {
			return key
		}
	case ed25519.PublicKey:
		if alg == string(jose.EdDSA) {
			return key
		}
	}
	return nil // a symmetric ("oct") or private key, or one that does not fit alg
}

// fetch reads the issuer's metadata (RFC 8414, then OpenID Connect discovery) and its key set, bounded.
func (i *issuer) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	meta, err := i.metadata(ctx)
	if err != nil {
		return nil, err
	}
	if meta.JWKSURI == "" {
		return nil, errors.New("its metadata has no jwks_uri")
	}
	data, err := i.get(ctx, meta.JWKSURI, i.s.cfg.MaxKeySetBytes)
	if err != nil {
		return nil, err
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, errors.New("its key set is not JSON")
	}
	if len(set.Keys) > i.s.cfg.MaxKeys {
		return nil, fmt.Errorf("its key set has %d keys, over the bound of %d", len(set.Keys), i.s.cfg.MaxKeys)
	}
	var keys []jose.JSONWebKey
	for _, raw := range set.Keys {
		var k jose.JSONWebKey
		if k.UnmarshalJSON(raw) != nil || !k.IsPublic() || (k.Use != "" && k.Use != "sig") {
			continue // a key of a type go-jose does not know, a private or symmetric key, or one for encryption
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// metadata fetches the issuer's authorization-server metadata: the RFC 8414 well-known URL, then the OpenID
// Connect ones; the issuer in it must be this one.
func (i *issuer) metadata(ctx context.Context) (*oauthex.AuthServerMeta, error) {
	u, err := url.Parse(i.id)
	if err != nil {
		return nil, err
	}
	path := strings.TrimSuffix(u.Path, "/")
	base := url.URL{Scheme: u.Scheme, Host: u.Host}
	var tried []string
	for _, p := range []string{"/.well-known/oauth-authorization-server" + path, "/.well-known/openid-configuration" + path,
		path + "/.well-known/openid-configuration"} {
		base.Path = p
		data, err := i.get(ctx, base.String(), 1<<20)
		if err != nil {
			tried = append(tried, err.Error())
			continue
		}
		var meta oauthex.AuthServerMeta
		if err := json.Unmarshal(data, &meta); err != nil {
			tried = append(tried, base.String()+": not JSON")
			continue
		}
		if meta.Issuer != i.id {
			return nil, fmt.Errorf("the metadata at %s names issuer %q", base.String(), meta.Issuer)
		}
		return &meta, nil
	}
	return nil, fmt.Errorf("no metadata: %s", strings.Join(tried, "; "))
}

// get fetches u through the Server's client, reading at most limit bytes.
func (i *issuer) get(ctx context.Context, u string, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := i.s.cfg.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", u, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", u, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", u, limit)
	}
	return data, nil
}

// tokenDigest keys the introspection cache: never the token itself.
func tokenDigest(token string) [32]byte { return sha256.Sum256([]byte(token)) }

// AuthServerMetadata returns the authorization-server metadata of issuer, one of Config.Issuers, fetched as the
// tokens' keys are (through Config.Client, its issuer checked): for a host that signs its users in at the same
// authorization server, such as a gateway that checks who opened a link it handed out. It fetches on every call.
func (s *Server) AuthServerMetadata(ctx context.Context, issuer string) (*oauthex.AuthServerMeta, error) {
	i := s.issuers[issuer]
	if i == nil {
		return nil, fmt.Errorf("resource: %q is not one of the issuers", issuer)
	}
	return i.metadata(ctx)
}

// Issuers returns the issuers whose tokens are accepted, as configured.
func (s *Server) Issuers() []string { return slices.Clone(s.cfg.Issuers) }
