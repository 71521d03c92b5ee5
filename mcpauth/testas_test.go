package mcpauth_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// testAS is an OAuth authorization server and an MCP server's metadata on one httptest server, for the Client's
// tests: it checks PKCE S256, resource and state as a real one would, issues canary tokens and refresh tokens that
// rotate, and fails a reused refresh token (reused is set: the test fails on it).
type testAS struct {
	t   *testing.T
	srv *httptest.Server
	// prmResource, when set, is the protected-resource metadata's resource (default: the server URL).
	prmResource string
	// issuer, when set, is the issuer the authorization server's metadata names (default: its URL).
	issuer string
	// expiresIn is the tokens' expires_in in seconds (default 3600).
	expiresIn int
	// refuseRefresh makes every refresh answer invalid_grant.
	refuseRefresh bool
	// clientKey verifies private_key_jwt assertions; grantTypes, when set, is the metadata's grant_types_supported.
	clientKey  crypto.PublicKey
	grantTypes []string
	assertions []map[string]any // the verified assertions' claims
	// rejectClient makes the token endpoint answer invalid_client to the code exchange.
	rejectClient bool
	// noPRM makes the server one of 2025-03-26: no protected-resource metadata.
	noPRM bool
	// redirectPRM, when set, answers the protected-resource metadata with a redirect there.
	redirectPRM string

	mu         sync.Mutex
	requests   []string          // "METHOD path" of each request
	challenges map[string]string // code → the code_challenge of its authorization request
	resources  map[string]string // code → resource
	clientIDs  []string          // the client_id of each authorization request
	live       map[string]bool   // refresh tokens not yet spent
	spent      map[string]bool   // refresh tokens spent
	reused     int               // refresh tokens presented a second time
	refreshes  int               // refresh grants answered
	issued     []string          // every token, code and secret issued: canaries
	form       url.Values        // the last token request's form
	revoked    []string          // the tokens revoked (RFC 7009)
	n          int
}

func newTestAS(t *testing.T) *testAS {
	a := &testAS{t: t, challenges: map[string]string{}, resources: map[string]string{}, live: map[string]bool{},
		spent: map[string]bool{}, expiresIn: 3600}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

// serverURL is the protected MCP server's URL.
func (a *testAS) serverURL() string { return a.srv.URL + "/mcp" }

func (a *testAS) count(prefix string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, r := range a.requests {
		if strings.HasPrefix(r, prefix) {
			n++
		}
	}
	return n
}

// canary returns a fresh secret-looking value, remembered as issued; a.mu is held.
func (a *testAS) canary(kind string) string {
	a.n++
	v := fmt.Sprintf("canary-%s-%d-%s", kind, a.n, strings.Repeat("x", 12))
	a.issued = append(a.issued, v)
	return v
}

func (a *testAS) serve(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.requests = append(a.requests, r.Method+" "+r.URL.Path)
	base := a.srv.URL
	issuer := a.issuer
	if issuer == "" {
		issuer = base
	}
	switch r.URL.Path {
	case "/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource":
		if a.redirectPRM != "" {
			http.Redirect(w, r, a.redirectPRM, http.StatusFound)
			return
		}
		if a.noPRM {
			http.NotFound(w, r)
			return
		}
		res := a.prmResource
		if res == "" {
			res = base + "/mcp"
		}
		writeJSON(w, map[string]any{"resource": res, "authorization_servers": []string{issuer},
			"scopes_supported": []string{"read"}})
	case "/.well-known/oauth-authorization-server":
		writeJSON(w, map[string]any{"issuer": issuer, "authorization_endpoint": base + "/authorize",
			"token_endpoint": base + "/token", "registration_endpoint": base + "/register",
			"revocation_endpoint":              base + "/revoke",
			"code_challenge_methods_supported": []string{"S256"}, "scopes_supported": []string{"read", "offline_access"},
			"authorization_response_iss_parameter_supported": true, "response_types_supported": []string{"code"},
			"grant_types_supported": a.grantTypes})
	case "/register":
		writeJSONStatus(w, http.StatusCreated, map[string]any{"client_id": "client-1", "client_secret": a.canary("client-secret"),
			"token_endpoint_auth_method": "client_secret_basic"})
	case "/authorize":
		q := r.URL.Query()
		if q.Get("code_challenge_method") != "S256" || q.Get("state") == "" || q.Get("resource") == "" {
			http.Error(w, "bad authorization request", http.StatusBadRequest)
			return
		}
		code := a.canary("code")
		a.challenges[code], a.resources[code] = q.Get("code_challenge"), q.Get("resource")
		a.clientIDs = append(a.clientIDs, q.Get("client_id"))
		u, _ := url.Parse(q.Get("redirect_uri"))
		v := url.Values{"code": {code}, "state": {q.Get("state")}, "iss": {issuer}}
		u.RawQuery = v.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	case "/token":
		a.token(w, r)
	case "/revoke":
		_ = r.ParseForm()
		if _, _, ok := r.BasicAuth(); !ok {
			writeJSONStatus(w, http.StatusUnauthorized, map[string]any{"error": "invalid_client"})
			return
		}
		a.revoked = append(a.revoked, r.PostForm.Get("token"))
		delete(a.live, r.PostForm.Get("token"))
	default:
		http.NotFound(w, r)
	}
}

// token is the token endpoint; a.mu is held.
func (a *testAS) token(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	a.form = r.PostForm
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		if a.rejectClient {
			writeJSONStatus(w, http.StatusUnauthorized, map[string]any{"error": "invalid_client"})
			return
		}
		code := r.PostForm.Get("code")
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		want, ok := a.challenges[code]
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != want || r.PostForm.Get("resource") != a.resources[code] {
			writeJSONStatus(w, http.StatusBadRequest, map[string]any{"error": "invalid_grant"})
			return
		}
		delete(a.challenges, code)
	case "client_credentials":
		if err := a.verifyAssertion(r.PostForm); err != nil || r.PostForm.Get("resource") == "" {
			writeJSONStatus(w, http.StatusUnauthorized, map[string]any{"error": "invalid_client"})
			return
		}
	case "refresh_token":
		rt := r.PostForm.Get("refresh_token")
		if a.spent[rt] {
			a.reused++
		}
		if !a.live[rt] || a.refuseRefresh {
			writeJSONStatus(w, http.StatusBadRequest, map[string]any{"error": "invalid_grant", "error_description": "refresh token " + rt + " is spent"})
			return
		}
		delete(a.live, rt)
		a.spent[rt] = true
		a.refreshes++
	default:
		writeJSONStatus(w, http.StatusBadRequest, map[string]any{"error": "unsupported_grant_type"})
		return
	}
	refresh := a.canary("refresh")
	a.live[refresh] = true
	writeJSON(w, map[string]any{"access_token": a.canary("access"), "token_type": "Bearer",
		"expires_in": a.expiresIn, "refresh_token": refresh, "scope": "read offline_access"})
}

func writeJSON(w http.ResponseWriter, v any) { writeJSONStatus(w, http.StatusOK, v) }

func writeJSONStatus(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// canaries returns every secret the server issued.
func (a *testAS) canaries() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.issued...)
}

// verifyAssertion checks a private_key_jwt client assertion against a.clientKey: its type, signature (ES256 as
// r‖s, RS256), iss = sub = client_id, aud = the issuer; a.mu is held.
func (a *testAS) verifyAssertion(form url.Values) error {
	if form.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
		return errors.New("client_assertion_type")
	}
	parts := strings.Split(form.Get("client_assertion"), ".")
	if len(parts) != 3 {
		return errors.New("not a JWS")
	}
	var header struct{ Alg string }
	var claims map[string]any
	hb, _ := base64.RawURLEncoding.DecodeString(parts[0])
	cb, _ := base64.RawURLEncoding.DecodeString(parts[1])
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	if json.Unmarshal(hb, &header) != nil || json.Unmarshal(cb, &claims) != nil {
		return errors.New("not JSON")
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	switch k := a.clientKey.(type) {
	case *ecdsa.PublicKey:
		if header.Alg != "ES256" || len(sig) != 64 ||
			!ecdsa.Verify(k, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
			return errors.New("ES256 signature")
		}
	case *rsa.PublicKey:
		if header.Alg != "RS256" || rsa.VerifyPKCS1v15(k, crypto.SHA256, digest[:], sig) != nil {
			return errors.New("RS256 signature")
		}
	default:
		return errors.New("no client key")
	}
	if claims["iss"] != form.Get("client_id") || claims["sub"] != form.Get("client_id") || claims["aud"] != a.srv.URL ||
		claims["jti"] == nil || claims["exp"] == nil {
		return fmt.Errorf("claims %v", claims)
	}
	a.assertions = append(a.assertions, claims)
	return nil
}
