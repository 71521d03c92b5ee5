package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// localIssuer is an authorization server on loopback: RFC 8414 metadata and one EC signing key, and the code flow
// with PKCE for a browser whose user is whoever its session cookie there (door-user) names: no login page.
type localIssuer struct {
	*httptest.Server
	key *ecdsa.PrivateKey

	mu    sync.Mutex
	codes map[string]asGrant
}

func newLocalIssuer(t *testing.T) *localIssuer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	is := &localIssuer{key: key, codes: map[string]asGrant{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": is.URL, "jwks_uri": is.URL + "/jwks",
			"authorization_endpoint": is.URL + "/authorize", "token_endpoint": is.URL + "/token"})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		who, err := r.Cookie("door-user")
		if err != nil || q.Get("code_challenge_method") != "S256" || q.Get("client_id") != "gateway" {
			http.Error(w, "no session, no PKCE or an unknown client", http.StatusBadRequest)
			return
		}
		code := rand.Text()
		is.mu.Lock()
		is.codes[code] = asGrant{user: who.Value, challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"),
			resource: q.Get("resource")}
		is.mu.Unlock()
		http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		is.mu.Lock()
		g, ok := is.codes[r.PostForm.Get("code")]
		delete(is.codes, r.PostForm.Get("code"))
		is.mu.Unlock()
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		w.Header().Set("Content-Type", "application/json")
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge || r.PostForm.Get("redirect_uri") != g.redirect {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":"invalid_grant"}`)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"access_token": is.token(t, g.user, g.resource, ""),
			"token_type": "Bearer", "expires_in": 3600})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	})
	is.Server = httptest.NewServer(mux)
	t.Cleanup(is.Close)
	return is
}

// token is an access token of is for sub, for resource, with scope, valid for an hour from now.
func (is *localIssuer) token(t *testing.T, sub, resource, scope string) string {
	t.Helper()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: is.key},
		(&jose.SignerOptions{}).WithHeader("kid", "k1").WithType("at+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok, err := jwt.Signed(sig).Claims(map[string]any{"iss": is.URL, "sub": sub, "aud": resource, "scope": scope,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "jti": rand.Text()}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestServeMCPAsAProtectedResource: serve-mcp --resource-url publishes RFC 9728 metadata, admits the tokens of its
// issuer for its resource with the scopes a call needs, keeps a user's session across their refreshed token,
// refuses another user's request for it, and never logs a token.
func TestServeMCPAsAProtectedResource(t *testing.T) {
	t.Parallel()
	const resourceURL = "https://gw.example/mcp"
	is := newLocalIssuer(t)
	file := writeFile(t, "calc.yaml", calcManifest)
	srv := serveMCPHTTP(t, file, nil, "--resource-url", resourceURL, "--auth-issuer", is.URL, "--auth-allow-loopback",
		"--scope", "mcp", "--tool-scope", "calc_shout=shout")
	base := strings.TrimSuffix(srv.url, "/mcp")

	resp, err := http.Get(base + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&meta)
	_ = resp.Body.Close()
	if meta.Resource != resourceURL || len(meta.AuthorizationServers) != 1 || meta.AuthorizationServers[0] != is.URL {
		t.Errorf("metadata %+v", meta)
	}
	resp, err = http.Post(srv.url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized ||
		!strings.Contains(ch, `resource_metadata="https://gw.example/.well-known/oauth-protected-resource/mcp"`) {
		t.Errorf("without a token: %d %q, want 401 naming the metadata", resp.StatusCode, ch)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	alice := &switchToken{token: is.token(t, "alice", resourceURL, "mcp shout")}
	c := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-test", Version: "1"}, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: alice}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	shout := func() (*mcp.CallToolResult, error) {
		return s.CallTool(ctx, &mcp.CallToolParams{Name: "calc_shout", Arguments: map[string]any{"name": "ada"}})
	}
	if res, err := shout(); err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "ADA" {
		t.Fatalf("calc_shout with alice's token: %v %+v", err, res)
	}
	first := alice.token
	second := is.token(t, "alice", resourceURL, "mcp shout")
	alice.set(second) // refreshed: the session stays hers

	if res, err := shout(); err != nil || res.IsError {
		t.Fatalf("calc_shout with alice's refreshed token: %v %+v", err, res)
	}

	post := func(token, body string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, srv.url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", s.ID())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp
	}
	call := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"calc_shout","arguments":{"name":"x"}}}`
	if resp := post(is.token(t, "mallory", resourceURL, "mcp shout"), call); resp.StatusCode != http.StatusNotFound {
		t.Errorf("another user's request for alice's session: %d, want 404", resp.StatusCode)
	}
	if resp := post(is.token(t, "alice", resourceURL, "mcp"), call); resp.StatusCode != http.StatusForbidden ||
		!strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`) {
		t.Errorf("a token without the tool's scope: %d %q, want 403 insufficient_scope", resp.StatusCode,
			resp.Header.Get("WWW-Authenticate"))
	}
	if resp := post(is.token(t, "alice", "https://other.example/mcp", "mcp shout"), call); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a token for another resource: %d, want 401", resp.StatusCode)
	}
	log := srv.log()
	for _, tok := range []string{first, second} {
		payload := strings.Split(tok, ".")[1]
		if strings.Contains(log, tok) || strings.Contains(log, payload) || strings.Contains(log, base64.StdEncoding.EncodeToString([]byte(tok))) {
			t.Errorf("serve-mcp logged a token: %s", log)
		}
	}
}

// switchToken sends the token it holds now.
type switchToken struct {
	mu    sync.Mutex
	token string
}

func (s *switchToken) set(tok string) {
	s.mu.Lock()
	s.token = tok
	s.mu.Unlock()
}

func (s *switchToken) RoundTrip(r *http.Request) (*http.Response, error) {
	s.mu.Lock()
	tok := s.token
	s.mu.Unlock()
	return withToken{tok}.RoundTrip(r)
}
