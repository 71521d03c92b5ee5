package resource_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/commonagents-go/tool/mcpauth"
	"github.com/commonagents-go/tool/mcpserve/resource"
)

const resourceURL = "https://gw.example/mcp"

var epoch = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// testIssuer is a local authorization server: RFC 8414 metadata and a key set of an RSA and an EC key.
type testIssuer struct {
	*httptest.Server
	rsa       *rsa.PrivateKey
	ec        *ecdsa.PrivateKey
	keySet    atomic.Pointer[[]byte] // what /jwks serves
	keyGets   atomic.Int32
	introspec func(token string) map[string]any
}

func newIssuer(t testing.TB) *testIssuer {
	t.Helper()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	is := &testIssuer{rsa: rk, ec: ek}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": is.URL, "jwks_uri": is.URL + "/jwks",
			"introspection_endpoint": is.URL + "/introspect", "code_challenge_methods_supported": []string{"S256"}})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		is.keyGets.Add(1)
		w.Write(*is.keySet.Load())
	})
	mux.HandleFunc("/introspect", func(w http.ResponseWriter, r *http.Request) {
		if id, secret, _ := r.BasicAuth(); id != "gw" || secret != "gw-secret" {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		r.ParseForm()
		json.NewEncoder(w).Encode(is.introspec(r.PostForm.Get("token")))
	})
	is.Server = httptest.NewServer(mux)
	t.Cleanup(is.Close)
	is.setKeys(t, jose.JSONWebKey{Key: &rk.PublicKey, KeyID: "r1", Algorithm: "RS256", Use: "sig"},
		jose.JSONWebKey{Key: &ek.PublicKey, KeyID: "e1", Algorithm: "ES256", Use: "sig"})
	return is
}

func (is *testIssuer) setKeys(t testing.TB, keys ...jose.JSONWebKey) {
	t.Helper()
	b, err := json.Marshal(jose.JSONWebKeySet{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	is.keySet.Store(&b)
}

// token signs claims with key under kid and alg, with extra header fields.
func token(t testing.TB, alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any, hdr map[jose.HeaderKey]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithHeader("kid", kid)
	for k, v := range hdr {
		opts = opts.WithHeader(k, v)
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jwt.Signed(sig).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// goodClaims are the claims of a valid token of is for alice.
func goodClaims(is *testIssuer) map[string]any {
	return map[string]any{"iss": is.URL, "sub": "alice", "aud": resourceURL, "exp": epoch.Add(time.Hour).Unix(),
		"iat": epoch.Unix(), "scope": "mcp:tools"}
}

func with(m map[string]any, k string, v any) map[string]any {
	out := map[string]any{}
	for kk, vv := range m {
		out[kk] = vv
	}
	if v == nil {
		delete(out, k)
	} else {
		out[k] = v
	}
	return out
}

// newServer is a resource.Server trusting is, over a client that may reach loopback, on a clock at epoch.
func newServer(t *testing.T, is *testIssuer, cfg resource.Config) *resource.Server {
	t.Helper()
	cfg.Resource = resourceURL
	cfg.Issuers = append(cfg.Issuers, is.URL)
	if cfg.Client == nil {
		cfg.Client = mcpauth.Guard{AllowLoopback: true}.Client()
	}
	cfg.Now = func() time.Time { return epoch }
	s, err := resource.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// call sends a POST with body and the bearer token through s's Handler, and returns the response and the user
// the inner handler saw.
func call(s *resource.Server, token, body string) (*httptest.ResponseRecorder, *resource.User) {
	var seen *resource.User
	h := s.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, ok := resource.UserFrom(r.Context()); ok {
			seen = &u
		}
		b, _ := io.ReadAll(r.Body)
		w.Write(b) // the body reaches the server whole
	}))
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec, seen
}

func TestValidTokenIsAdmittedWithItsUser(t *testing.T) {
	t.Parallel()
	is := newIssuer(t)
	s := newServer(t, is, resource.Config{Scopes: []string{"mcp:tools"}})
	for name, tok := range map[string]string{
		"RS256": token(t, jose.RS256, is.rsa, "r1", goodClaims(is), nil),
		"ES256 at+jwt": token(t, jose.ES256, is.ec, "e1", goodClaims(is),
			map[jose.HeaderKey]any{jose.HeaderType: "at+jwt"}),
	} {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
		rec, u := call(s, tok, body)
		if rec.Code != http.StatusOK || rec.Body.String() != body {
			t.Fatalf("%s: %d %q, want 200 and the body passed on", name, rec.Code, rec.Body)
		}
		if u == nil || u.Subject != "alice" || u.Issuer != is.URL || u.Key() == "" {
			t.Errorf("%s: user %+v", name, u)
		}
	}
	if n := is.keyGets.Load(); n != 1 {
		t.Errorf("the key set was fetched %d times for two tokens of known keys, want once", n)
	}
}

// Each forged, misdirected or stale token is refused 401 with an invalid_token challenge naming the metadata.
func TestBadTokensAreRefused(t *testing.T) {
	t.Parallel()
	is := newIssuer(t)
	other := newIssuer(t) // keys nobody trusts
	good := goodClaims(is)
	rsaPub, err := x509.MarshalPKIXPublicKey(&is.rsa.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"r1"}`)) + "." +
		base64.RawURLEncoding.EncodeToString(must(json.Marshal(good))) + "."
	tests := map[string]string{
		"wrong aud":                    token(t, jose.RS256, is.rsa, "r1", with(good, "aud", "https://other.example/mcp"), nil),
		"expired":                      token(t, jose.RS256, is.rsa, "r1", with(good, "exp", epoch.Add(-time.Hour).Unix()), nil),
		"no exp":                       token(t, jose.RS256, is.rsa, "r1", with(good, "exp", nil), nil),
		"not yet valid":                token(t, jose.RS256, is.rsa, "r1", with(good, "nbf", epoch.Add(time.Hour).Unix()), nil),
		"unknown kid":                  token(t, jose.RS256, is.rsa, "r9", good, nil),
		"signed by another key":        token(t, jose.RS256, other.rsa, "r1", good, nil),
		"another issuer":               token(t, jose.RS256, other.rsa, "r1", with(good, "iss", other.URL), nil),
		"alg none":                     none,
		"HMAC with the public key":     token(t, jose.HS256, rsaPub, "r1", good, nil),
		"typ of an ID token":           token(t, jose.RS256, is.rsa, "r1", good, map[jose.HeaderKey]any{jose.HeaderType: "JWT"}),
		"RS256 claimed for the EC key": token(t, jose.RS256, is.rsa, "e1", good, nil),
		"opaque without introspection": "an-opaque-token",
	}
	s := newServer(t, is, resource.Config{})
	for name, tok := range tests {
		rec, u := call(s, tok, `{}`)
		if rec.Code != http.StatusUnauthorized || u != nil {
			t.Errorf("%s: %d, user %v; want 401", name, rec.Code, u)
			continue
		}
		ch := rec.Header().Get("WWW-Authenticate")
		if !strings.Contains(ch, `error="invalid_token"`) || !strings.Contains(ch, `resource_metadata="https://gw.example/.well-known/oauth-protected-resource/mcp"`) {
			t.Errorf("%s: challenge %q", name, ch)
		}
		if strings.Contains(rec.Body.String(), tok) || strings.Contains(ch, tok) {
			t.Errorf("%s: the response quotes the token", name)
		}
		if _, err := s.Verify(context.Background(), tok); !errors.Is(err, resource.ErrInvalidToken) || strings.Contains(err.Error(), tok) {
			t.Errorf("%s: Verify = %v, want ErrInvalidToken without the token", name, err)
		}
	}
	rec, _ := call(s, "", `{}`)
	if ch := rec.Header().Get("WWW-Authenticate"); rec.Code != http.StatusUnauthorized || strings.Contains(ch, "error=") ||
		!strings.Contains(ch, "resource_metadata=") {
		t.Errorf("no token: %d %q, want 401 with a challenge and no error code (RFC 6750 §3.1)", rec.Code, ch)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// A token without a scope the request needs is refused 403 insufficient_scope, naming the scopes wanted; tool
// scopes apply to a tools/call of that tool only, in a batch too.
func TestScopes(t *testing.T) {
	t.Parallel()
	is := newIssuer(t)
	s := newServer(t, is, resource.Config{Scopes: []string{"mcp:tools"}, ToolScopes: map[string][]string{"deploy": {"deploy:write"}}})
	plain := token(t, jose.RS256, is.rsa, "r1", goodClaims(is), nil)
	deployer := token(t, jose.RS256, is.rsa, "r1", with(goodClaims(is), "scope", "mcp:tools deploy:write"), nil)
	none := token(t, jose.RS256, is.rsa, "r1", with(goodClaims(is), "scope", "profile"), nil)
	deploy := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"deploy","arguments":{}}}`
	status := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"status"}}`
	for _, tc := range []struct {
		name, token, body string
		code              int
		scope             string
	}{
		{"a call with the scopes", deployer, deploy, 200, ""},
		{"another tool", plain, status, 200, ""},
		{"the tool's scope missing", plain, deploy, 403, "mcp:tools deploy:write"},
		{"in a batch", plain, "[" + status + "," + deploy + "]", 403, "mcp:tools deploy:write"},
		{"the name spelt twice", plain, `{"method":"tools/call","params":{"name":"status","NAME":"deploy"}}`, 403, "mcp:tools deploy:write"},
		{"every request's scope missing", none, status, 403, "mcp:tools"},
	} {
		rec, _ := call(s, tc.token, tc.body)
		if rec.Code != tc.code {
			t.Errorf("%s: %d, want %d", tc.name, rec.Code, tc.code)
			continue
		}
		if tc.code == 200 && rec.Body.String() != tc.body {
			t.Errorf("%s: the server got %q", tc.name, rec.Body)
		}
		if ch := rec.Header().Get("WWW-Authenticate"); tc.code == 403 &&
			(!strings.Contains(ch, `error="insufficient_scope"`) || !strings.Contains(ch, fmt.Sprintf("scope=%q", tc.scope))) {
			t.Errorf("%s: challenge %q, want insufficient_scope and scope %q", tc.name, ch, tc.scope)
		}
	}
}

// An issuer's key set is bounded in size and in keys, holds no symmetric key that counts, and is fetched again
// for an unknown kid at most once per RefetchInterval.
func TestKeySetBounds(t *testing.T) {
	t.Parallel()
	is := newIssuer(t)
	good := token(t, jose.RS256, is.rsa, "r1", goodClaims(is), nil)
	big := bytes.Repeat([]byte(" "), resource.DefaultMaxKeySetBytes+1)
	is.keySet.Store(&big)
	if _, err := newServer(t, is, resource.Config{}).Verify(context.Background(), good); !errors.Is(err, resource.ErrInvalidToken) ||
		!strings.Contains(err.Error(), "larger than") {
		t.Errorf("a key set over the bound: %v", err)
	}
	is.setKeys(t, jose.JSONWebKey{Key: &is.rsa.PublicKey, KeyID: "r1", Algorithm: "RS256"},
		jose.JSONWebKey{Key: &is.ec.PublicKey, KeyID: "e1", Algorithm: "ES256"})
	if _, err := newServer(t, is, resource.Config{MaxKeys: 1}).Verify(context.Background(), good); err == nil ||
		!strings.Contains(err.Error(), "over the bound") {
		t.Errorf("a key set of 2 keys over a bound of 1: %v", err)
	}
	// A symmetric key under the kid the token names: never a key to verify with.
	secret := []byte("0123456789abcdef0123456789abcdef")
	is.setKeys(t, jose.JSONWebKey{Key: secret, KeyID: "h1", Algorithm: "HS256"})
	if _, err := newServer(t, is, resource.Config{}).Verify(context.Background(),
		token(t, jose.HS256, secret, "h1", goodClaims(is), nil)); !errors.Is(err, resource.ErrInvalidToken) {
		t.Errorf("an HMAC token of an oct key in the key set: %v", err)
	}
	is.setKeys(t, jose.JSONWebKey{Key: &is.rsa.PublicKey, KeyID: "r1", Algorithm: "RS256"})
	s := newServer(t, is, resource.Config{})
	before := is.keyGets.Load()
	for range 5 {
		s.Verify(context.Background(), token(t, jose.RS256, is.rsa, "unknown", goodClaims(is), nil))
	}
	if n := is.keyGets.Load() - before; n != 1 {
		t.Errorf("5 tokens of an unknown kid fetched the key set %d times, want once per RefetchInterval", n)
	}
}

// By default the client refuses the issuer's loopback address: a server configured with a local issuer by
// mistake, or tricked into one, admits nothing.
func TestIssuerAtAPrivateAddressIsRefusedByDefault(t *testing.T) {
	t.Parallel()
	is := newIssuer(t)
	s, err := resource.New(resource.Config{Resource: resourceURL, Issuers: []string{is.URL}, Now: func() time.Time { return epoch }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Verify(context.Background(), token(t, jose.RS256, is.rsa, "r1", goodClaims(is), nil)); !errors.Is(err, resource.ErrInvalidToken) {
		t.Errorf("Verify through the default client = %v, want a refusal", err)
	}
	if n := is.keyGets.Load(); n != 0 {
		t.Errorf("the key set at a loopback address was fetched %d times", n)
	}
}

// An opaque token is checked at the introspection endpoint: active, for this resource, cached until its exp.
func TestOpaqueTokensAreIntrospected(t *testing.T) {
	t.Parallel()
	is := newIssuer(t)
	var asked atomic.Int32
	is.introspec = func(tok string) map[string]any {
		asked.Add(1)
		switch tok {
		case "opaque-good":
			return map[string]any{"active": true, "sub": "bob", "iss": is.URL, "aud": resourceURL, "scope": "mcp:tools",
				"exp": epoch.Add(time.Hour).Unix()}
		case "opaque-other-aud":
			return map[string]any{"active": true, "sub": "bob", "iss": is.URL, "aud": []string{"https://other.example"},
				"exp": epoch.Add(time.Hour).Unix()}
		}
		return map[string]any{"active": false}
	}
	s := newServer(t, is, resource.Config{Introspection: &resource.Introspection{URL: is.URL + "/introspect",
		ClientID: "gw", ClientSecret: "gw-secret"}})
	for range 3 {
		u, err := s.Verify(context.Background(), "opaque-good")
		if err != nil || u.Subject != "bob" {
			t.Fatalf("Verify = %+v, %v", u, err)
		}
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("3 uses of one token asked the endpoint %d times, want once (cached)", n)
	}
	for _, tok := range []string{"opaque-other-aud", "opaque-revoked"} {
		if _, err := s.Verify(context.Background(), tok); !errors.Is(err, resource.ErrInvalidToken) || strings.Contains(err.Error(), tok) {
			t.Errorf("%s: %v, want a refusal that does not quote it", tok, err)
		}
	}
}

// The metadata names the resource, its issuers and every scope it asks for.
func TestMetadata(t *testing.T) {
	t.Parallel()
	is := newIssuer(t)
	s := newServer(t, is, resource.Config{Scopes: []string{"mcp:tools"}, ToolScopes: map[string][]string{"deploy": {"deploy:write"}}})
	if got := s.MetadataPath(); got != "/.well-known/oauth-protected-resource/mcp" {
		t.Errorf("MetadataPath = %q", got)
	}
	rec := httptest.NewRecorder()
	s.Metadata().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, s.MetadataPath(), nil))
	var meta struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		ScopesSupported      []string `json:"scopes_supported"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &meta); err != nil {
		t.Fatal(err)
	}
	if meta.Resource != resourceURL || len(meta.AuthorizationServers) != 1 || meta.AuthorizationServers[0] != is.URL ||
		strings.Join(meta.ScopesSupported, " ") != "mcp:tools deploy:write" {
		t.Errorf("metadata %s", rec.Body)
	}
}

// A token that passed is remembered until its exp, and refused past it (and the leeway), without a second
// signature check in between.
func TestVerifiedTokensExpire(t *testing.T) {
	t.Parallel()
	is := newIssuer(t)
	var now atomic.Int64
	now.Store(epoch.Unix())
	s, err := resource.New(resource.Config{Resource: resourceURL, Issuers: []string{is.URL},
		Client: mcpauth.Guard{AllowLoopback: true}.Client(), Now: func() time.Time { return time.Unix(now.Load(), 0) }})
	if err != nil {
		t.Fatal(err)
	}
	tok := token(t, jose.RS256, is.rsa, "r1", goodClaims(is), nil) // exp: epoch + 1h
	for _, at := range []time.Duration{0, 30 * time.Minute, time.Hour + 29*time.Second} {
		now.Store(epoch.Add(at).Unix())
		if _, err := s.Verify(context.Background(), tok); err != nil {
			t.Fatalf("at +%s: %v", at, err)
		}
	}
	now.Store(epoch.Add(time.Hour + resource.DefaultLeeway + time.Second).Unix())
	if _, err := s.Verify(context.Background(), tok); !errors.Is(err, resource.ErrInvalidToken) {
		t.Errorf("past exp and the leeway: %v, want a refusal", err)
	}
}
