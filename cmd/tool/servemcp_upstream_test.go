package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The gateway behind its door, with --upstream-auth, in front of an upstream MCP server (mcp-go's) protected by
// its own authorization server: each door user's calls use that user's own upstream grant, asked for through the
// user's MCP client, and completed by the user's browser at the gateway's callback.

// upstreamAS is the upstream's authorization server: dynamic registration, the code flow with PKCE S256, and a
// "user" who is whoever the browser's session cookie at the authorization server (as-user) names: no login page.
type upstreamAS struct {
	*httptest.Server
	mu      sync.Mutex
	codes   map[string]asGrant // code → what it grants
	tokens  map[string]string  // access token → upstream user
	secrets []string           // every code, token and state it saw
	issued  map[string]int     // upstream user → tokens issued to them
}

type asGrant struct{ user, challenge, redirect, resource string }

func newUpstreamAS(t *testing.T) *upstreamAS {
	t.Helper()
	as := &upstreamAS{codes: map[string]asGrant{}, tokens: map[string]string{}, issued: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": as.URL, "authorization_endpoint": as.URL + "/authorize",
			"token_endpoint": as.URL + "/token", "registration_endpoint": as.URL + "/register",
			"response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"},
			"grant_types_supported":                 []string{"authorization_code", "refresh_token"},
			"token_endpoint_auth_methods_supported": []string{"none"}})
	})
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		m["client_id"], m["token_endpoint_auth_method"] = "client-"+rand.Text(), "none"
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(m)
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		who, err := r.Cookie("as-user")
		if err != nil || q.Get("code_challenge_method") != "S256" || q.Get("state") == "" {
			http.Error(w, "no session at the authorization server, or no PKCE", http.StatusBadRequest)
			return
		}
		code := "code-" + rand.Text()
		as.mu.Lock()
		as.codes[code] = asGrant{user: who.Value, challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"),
			resource: q.Get("resource")}
		as.secrets = append(as.secrets, code, q.Get("state"))
		as.mu.Unlock()
		u, _ := url.Parse(q.Get("redirect_uri"))
		back := u.Query()
		back.Set("code", code)
		back.Set("state", q.Get("state"))
		u.RawQuery = back.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		as.mu.Lock()
		defer as.mu.Unlock()
		g, ok := as.codes[r.PostForm.Get("code")]
		delete(as.codes, r.PostForm.Get("code"))
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge ||
			r.PostForm.Get("redirect_uri") != g.redirect || r.PostForm.Get("resource") != g.resource {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":"invalid_grant"}`)
			return
		}
		tok := "at-" + rand.Text()
		as.tokens[tok] = g.user
		as.issued[g.user]++
		as.secrets = append(as.secrets, tok)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
	})
	as.Server = httptest.NewServer(mux)
	t.Cleanup(as.Close)
	return as
}

func (as *upstreamAS) tokenUser(tok string) (string, bool) {
	as.mu.Lock()
	defer as.mu.Unlock()
	u, ok := as.tokens[tok]
	return u, ok
}

func (as *upstreamAS) issuedTo(user string) int {
	as.mu.Lock()
	defer as.mu.Unlock()
	return as.issued[user]
}

type upstreamUserKey struct{}

// newProtectedUpstream is an mcp-go MCP server at /mcp whose tool whoami answers the upstream user its bearer was
// issued to; a request without a token of as gets 401 naming its protected-resource metadata.
func newProtectedUpstream(t *testing.T, as *upstreamAS) string {
	t.Helper()
	s := mcpgoserver.NewMCPServer("upstream", "1")
	s.AddTool(mcpgo.NewTool("whoami", mcpgo.WithDescription("Names the upstream user.")),
		func(ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			u, _ := ctx.Value(upstreamUserKey{}).(string)
			return mcpgo.NewToolResultText(u), nil
		})
	streamable := mcpgoserver.NewStreamableHTTPServer(s, mcpgoserver.WithHTTPContextFunc(
		func(ctx context.Context, r *http.Request) context.Context {
			u, _ := as.tokenUser(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
			return context.WithValue(ctx, upstreamUserKey{}, u)
		}))
	var srv *httptest.Server
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"resource": srv.URL + "/mcp", "authorization_servers": []string{as.URL}})
	})
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := as.tokenUser(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")); !ok {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", resource_metadata="`+srv.URL+
				`/.well-known/oauth-protected-resource/mcp"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		streamable.ServeHTTP(w, r)
	}))
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// gatewayHost is the gateway's public host in --resource-url: the browsers reach it through a dialer of theirs.
const gatewayHost = "gw.test"

// browser is a user's browser: a cookie jar, redirects followed as a browser follows them (or not, to hand a URL on
// as a person would), and gatewayHost resolved to the gateway's address.
type browser struct {
	jar    *cookiejar.Jar
	client *http.Client
}

// newBrowser is the browser of a person signed in as doorUser at the door's issuer and as asUser at the upstream's
// authorization server. Unless follow, it stops before the upstream's authorization server, as a person who copies
// that URL instead of going on.
func (g *upstreamGateway) newBrowser(t *testing.T, doorUser, asUser string, follow bool) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(g.as.URL)
	jar.SetCookies(u, []*http.Cookie{{Name: "as-user", Value: asUser, Path: "/"}})
	d, _ := url.Parse(g.door.URL)
	jar.SetCookies(d, []*http.Cookie{{Name: "door-user", Value: doorUser, Path: "/"}})
	gatewayAddr, asURL := g.addr, g.as.URL
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, _, _ := net.SplitHostPort(addr); host == gatewayHost {
			addr = gatewayAddr
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	b := &browser{jar: jar, client: &http.Client{Jar: jar, Transport: tr}}
	if !follow {
		b.client.CheckRedirect = func(req *http.Request, _ []*http.Request) error {
			if strings.HasPrefix(req.URL.String(), asURL+"/authorize") {
				return http.ErrUseLastResponse
			}
			return nil
		}
	}
	return b
}

// open GETs u and returns the last response's status, its Location and its body.
func (b *browser) open(t *testing.T, u string) (int, string, string) {
	t.Helper()
	resp, err := b.client.Get(u)
	if err != nil {
		t.Fatalf("the browser opening %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(body)
}

const upstreamManifest = `kind: commonagents.info/v1beta2/tool
namespace: tests
name: gw
description: A gateway in front of a protected upstream.
mcp:
  transport: streamable_http
  url: %s
actions:
  - name: whoami
    description: Names the upstream user.
    parameters: {properties: {}}
    execute:
      mcp: {}
`

// upstreamGateway is the built command serving a gateway with --upstream-auth in front of a protected upstream.
type upstreamGateway struct {
	mu        sync.Mutex
	completed map[string]chan string // door user → the elicitation IDs notifications/elicitation/complete named
	file      string                 // the manifest
	srv       *httpServer
	as        *upstreamAS
	door      *localIssuer
	addr      string // the gateway's address, where the browsers' gatewayHost goes
}

const upstreamResourceURL = "http://" + gatewayHost + "/mcp"

func newUpstreamGateway(t *testing.T) *upstreamGateway {
	t.Helper()
	as := newUpstreamAS(t)
	up := newProtectedUpstream(t, as)
	g := &upstreamGateway{as: as, door: newLocalIssuer(t)}
	g.file = writeFile(t, "gw.yaml", fmt.Sprintf(upstreamManifest, up))
	g.srv = g.replica(t, nil)
	u, _ := url.Parse(g.srv.url)
	g.addr = u.Host
	return g
}

// replica starts a gateway process of g's, with env and extra flags.
func (g *upstreamGateway) replica(t *testing.T, env []string, extra ...string) *httpServer {
	t.Helper()
	return serveMCPHTTP(t, g.file, append([]string{"DOOR_CLIENT_ID=gateway"}, env...), append([]string{
		"--resource-url", upstreamResourceURL, "--auth-issuer", g.door.URL, "--auth-allow-loopback", "--upstream-auth",
		"--upstream-login-client-env", "DOOR_CLIENT", "--action-names"}, extra...)...)
}

// client connects the door user sub to the gateway with a go-sdk client: with URL-mode elicitation answered by
// elicit when it is not nil, without any elicitation otherwise.
func (g *upstreamGateway) client(t *testing.T, sub string, elicit func(*mcp.ElicitParams) string) *mcp.ClientSession {
	t.Helper()
	completed := make(chan string, 8)
	opts := &mcp.ClientOptions{ElicitationCompleteHandler: func(_ context.Context, n *mcp.ElicitationCompleteNotificationRequest) {
		completed <- n.Params.ElicitationID
	}}
	g.mu.Lock()
	if g.completed == nil {
		g.completed = map[string]chan string{}
	}
	g.completed[sub] = completed
	g.mu.Unlock()
	if elicit != nil {
		opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: elicit(req.Params)}, nil
		}
		opts.Capabilities = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: sub, Version: "1"}, opts)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: g.srv.url,
		HTTPClient: &http.Client{Transport: withToken{g.door.token(t, sub, upstreamResourceURL, "")}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// whoami calls the upstream's whoami through the gateway: its text, or the call's error.
func whoami(cs *mcp.ClientSession) (string, error) {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	if err != nil {
		return "", err
	}
	if res.IsError || len(res.Content) != 1 {
		b, _ := json.Marshal(res)
		return "", fmt.Errorf("the call failed: %s", b)
	}
	tc, _ := res.Content[0].(*mcp.TextContent)
	if tc == nil {
		return "", errors.New("the call answered no text")
	}
	return tc.Text, nil
}

// elicitationRequired returns the URL elicitations of a -32042 error, failing the test for any other outcome.
func elicitationRequired(t *testing.T, err error) []mcp.ElicitParams {
	t.Helper()
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != -32042 {
		t.Fatalf("the call answered %v, want the error -32042", err)
	}
	var data struct {
		Elicitations []mcp.ElicitParams `json:"elicitations"`
	}
	if err := json.Unmarshal(rpc.Data, &data); err != nil || len(data.Elicitations) != 1 {
		t.Fatalf("the -32042 error's data %s: want one elicitation (%v)", rpc.Data, err)
	}
	return data.Elicitations
}

// checkConnectLink checks that an elicitation sends the user to the gateway's connect route, in URL mode, and
// names neither the authorization server nor its state.
func checkConnectLink(t *testing.T, g *upstreamGateway, e *mcp.ElicitParams) {
	t.Helper()
	if e.Mode != "url" || e.ElicitationID == "" || !strings.HasPrefix(e.URL, upstreamResourceURL+"/oauth/connect?") {
		t.Errorf("the elicitation is %+v, want URL mode with an ID, to the gateway's connect route", e)
	}
	if strings.Contains(e.URL, "state") || strings.Contains(e.URL, strings.TrimPrefix(g.as.URL, "http://")) ||
		strings.Contains(e.Message, "http") {
		t.Errorf("the elicitation names the authorization server or its state: %+v", e)
	}
}

// checkNoSecrets checks that the gateway's log holds none of the authorization server's codes, tokens and states.
func checkNoSecrets(t *testing.T, g *upstreamGateway) {
	t.Helper()
	log := g.srv.log()
	g.as.mu.Lock()
	defer g.as.mu.Unlock()
	for _, s := range g.as.secrets {
		if strings.Contains(log, s) {
			t.Errorf("the gateway's log holds a secret of the authorization: %s", log)
			return
		}
	}
}

// TestServeMCPUpstreamAuthorizationByURLElicitation: a door user's first call of a protected upstream sends the
// user's client a URL-mode elicitation of the gateway's connect link; the user's browser follows it through the
// upstream's authorization server to the gateway's callback, and the same call then goes on with the user's own
// upstream grant. The next call needs no authorization, and no code, token or state reaches the gateway's log.
func TestServeMCPUpstreamAuthorizationByURLElicitation(t *testing.T) {
	t.Parallel()
	g := newUpstreamGateway(t)
	alicesBrowser := g.newBrowser(t, "alice", "alice-upstream", true)
	var asked []*mcp.ElicitParams
	var opened []int
	cs := g.client(t, "alice", func(e *mcp.ElicitParams) string {
		asked = append(asked, e)
		status, _, _ := alicesBrowser.open(t, e.URL)
		opened = append(opened, status)
		return "accept"
	})
	who, err := whoami(cs)
	if err != nil || who != "alice-upstream" {
		t.Fatalf("whoami: %q, %v; want alice-upstream in the same call\n%s", who, err, g.srv.log())
	}
	if len(asked) != 1 || opened[0] != http.StatusOK {
		t.Fatalf("the client was asked %d times, the browser got %v; want one elicitation, completed", len(asked), opened)
	}
	checkConnectLink(t, g, asked[0])
	if who, err := whoami(cs); err != nil || who != "alice-upstream" || len(asked) != 1 {
		t.Errorf("the second whoami: %q, %v after %d elicitations; want alice-upstream without asking", who, err, len(asked))
	}
	checkNoSecrets(t, g)
}

// TestServeMCPUpstreamAuthorizationIsBoundToTheBrowser: for a client without URL-mode elicitation the call
// answers -32042 with the gateway's connect link. The authorization server's URL that link leads to, handed to
// another person's browser (which never opened the link), or to the browser of another door user (which opened a
// link of its own), completes nothing at the gateway's callback: no upstream account is bound to another door user,
// and the code is never exchanged. The browser that opened the link completes it, for its user only.
func TestServeMCPUpstreamAuthorizationIsBoundToTheBrowser(t *testing.T) {
	t.Parallel()
	g := newUpstreamGateway(t)
	alice, bob := g.client(t, "alice", nil), g.client(t, "bob", nil)
	_, err := whoami(alice)
	alicesLink := elicitationRequired(t, err)[0]
	checkConnectLink(t, g, &alicesLink)

	// Alice opens her link but goes no further: the gateway sends her to the authorization server.
	alicesHand := g.newBrowser(t, "alice", "alice-upstream", false)
	status, authURL, _ := alicesHand.open(t, alicesLink.URL)
	if status != http.StatusFound || !strings.HasPrefix(authURL, g.as.URL+"/authorize?") {
		t.Fatalf("the connect link answered %d to %q, want a redirect to the authorization server", status, authURL)
	}

	// Mallory's browser, which never opened Alice's link, is given the authorization server's URL.
	mallory := g.newBrowser(t, "mallory", "mallory-upstream", true)
	if status, _, _ := mallory.open(t, authURL); status != http.StatusForbidden {
		t.Errorf("another browser completing Alice's authorization: status %d, want 403", status)
	}
	// Bob opens his own link, then Alice's authorization server URL, in his browser.
	_, err = whoami(bob)
	bobsLink := elicitationRequired(t, err)[0]
	bobsBrowser := g.newBrowser(t, "bob", "bob-upstream", false)
	if status, _, _ := bobsBrowser.open(t, bobsLink.URL); status != http.StatusFound {
		t.Fatalf("Bob's link answered %d, want a redirect", status)
	}
	bobsBrowser.client.CheckRedirect = nil
	if status, _, _ := bobsBrowser.open(t, authURL); status != http.StatusForbidden {
		t.Errorf("Bob's browser completing Alice's authorization: status %d, want 403", status)
	}
	if n := g.as.issuedTo("mallory-upstream") + g.as.issuedTo("bob-upstream"); n != 0 {
		t.Errorf("%d tokens were issued for the refused completions", n)
	}
	_, err = whoami(alice)
	elicitationRequired(t, err) // nothing was bound to Alice

	// A tampered link opens nothing.
	if status, _, _ := mallory.open(t, alicesLink.URL+"A"); status != http.StatusBadRequest {
		t.Errorf("a tampered link: status %d, want 400", status)
	}

	// Alice's browser, which opened her link, completes it; Bob still has no grant.
	alicesHand.client.CheckRedirect = nil
	if status, _, body := alicesHand.open(t, authURL); status != http.StatusOK {
		t.Fatalf("Alice's browser completing her authorization: status %d: %s", status, body)
	}
	g.mu.Lock()
	completed := g.completed["alice"]
	g.mu.Unlock()
	select {
	case id := <-completed:
		if id != alicesLink.ElicitationID {
			t.Errorf("notifications/elicitation/complete named %q, want %q", id, alicesLink.ElicitationID)
		}
	case <-time.After(time.Minute):
		t.Error("no notifications/elicitation/complete reached Alice's client within a minute")
	}
	if who, err := whoami(alice); err != nil || who != "alice-upstream" {
		t.Errorf("Alice's whoami after her authorization: %q, %v", who, err)
	}
	_, err = whoami(bob)
	elicitationRequired(t, err)
	checkNoSecrets(t, g)
}

// TestServeMCPUpstreamAuthorizationChecksWhoOpensTheLink: a connect link that Alice hands to Mallory (the phishing
// of MCP's URL elicitation: Mallory would authorize her own upstream account for Alice's conversations, or the
// reverse) signs Mallory's browser in at the door's issuer, finds Mallory there, not Alice, and stops before the
// upstream's authorization server: nothing is granted, and Alice's own browser can still complete the link.
func TestServeMCPUpstreamAuthorizationChecksWhoOpensTheLink(t *testing.T) {
	t.Parallel()
	g := newUpstreamGateway(t)
	alice := g.client(t, "alice", nil)
	_, err := whoami(alice)
	link := elicitationRequired(t, err)[0]

	mallory := g.newBrowser(t, "mallory", "mallory-upstream", true)
	if status, _, body := mallory.open(t, link.URL); status != http.StatusForbidden || !strings.Contains(body, "someone else") {
		t.Errorf("Mallory opening Alice's link: status %d: %s; want 403", status, body)
	}
	if n := g.as.issuedTo("mallory-upstream"); n != 0 {
		t.Errorf("%d upstream tokens were issued to Mallory", n)
	}
	if _, err := whoami(alice); err == nil {
		t.Fatal("Alice's call went through after Mallory opened her link")
	}
	if status, _, body := g.newBrowser(t, "alice", "alice-upstream", true).open(t, link.URL); status != http.StatusOK {
		t.Fatalf("Alice opening her link: status %d: %s", status, body)
	}
	if who, err := whoami(alice); err != nil || who != "alice-upstream" {
		t.Errorf("Alice's whoami: %q, %v", who, err)
	}
	checkNoSecrets(t, g)
}

// TestServeMCPUpstreamAuthFlags: --upstream-auth needs the door, and a decision on who may open a connect link;
// its other flags need it.
func TestServeMCPUpstreamAuthFlags(t *testing.T) {
	t.Parallel()
	file := writeFile(t, "calc.yaml", calcManifest)
	door := []string{"--resource-url", "https://gw.example/mcp", "--auth-issuer", "https://issuer.example"}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no door", []string{"--upstream-auth", "--upstream-skip-login"}, "needs --resource-url"},
		{"no sign-in decided", append([]string{"--upstream-auth"}, door...), "--upstream-login-client-env"},
		{"both", append([]string{"--upstream-auth", "--upstream-skip-login", "--upstream-login-client-env", "X"}, door...),
			"--upstream-skip-login"},
		{"no upstream auth", append([]string{"--upstream-seal-env", "K"}, door...), "need --upstream-auth"},
		{"bad key", append([]string{"--upstream-auth", "--upstream-skip-login", "--upstream-seal-env", "NO_SUCH_KEY_VAR"},
			door...), "--upstream-seal-env"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"serve-mcp", file, "--http", "127.0.0.1:0"}, c.args...),
				&stdout, &stderr)
			if code != exitUsage || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("exit %d, stderr %q; want a usage error naming %s", code, stderr.String(), c.want)
			}
		})
	}
}

// TestServeMCPUpstreamAuthorizationOnAnyReplica: with a shared PostgreSQL Store and sealing key, the link one
// replica hands out completes on another (whose browser it reached), and the first replica's next call uses the
// grant. Needs TOOL_TEST_POSTGRES_DSN (scripts/postgres.sh).
func TestServeMCPUpstreamAuthorizationOnAnyReplica(t *testing.T) {
	dsn := os.Getenv("TOOL_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("TOOL_TEST_POSTGRES_DSN is not set")
	}
	t.Parallel()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	env := []string{"GW_SEAL=" + base64.StdEncoding.EncodeToString(key), "GW_STORE=" + dsn}
	flags := []string{"--upstream-seal-env", "GW_SEAL", "--upstream-store-env", "GW_STORE"}
	g := newUpstreamGateway(t)
	g.srv = g.replica(t, env, flags...)
	other := g.replica(t, env, flags...)
	u, _ := url.Parse(other.url)
	g.addr = u.Host // the browsers reach the other replica

	alice := g.client(t, "alice", nil)
	_, err := whoami(alice)
	link := elicitationRequired(t, err)[0]
	if status, _, body := g.newBrowser(t, "alice", "alice-upstream", true).open(t, link.URL); status != http.StatusOK {
		t.Fatalf("completing on the other replica: status %d: %s\n%s", status, body, other.log())
	}
	if who, err := whoami(alice); err != nil || who != "alice-upstream" {
		t.Errorf("Alice's whoami on the first replica: %q, %v", who, err)
	}
	for _, r := range []*httpServer{g.srv, other} {
		if strings.Contains(r.log(), dsn) {
			t.Errorf("a replica logged the DSN: %s", r.log())
		}
	}
	checkNoSecrets(t, g)
}
