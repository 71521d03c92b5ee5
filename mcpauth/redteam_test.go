package mcpauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/mcpauth"
)

// asRequests counts the requests that reached the authorization server's side of a testAS.
func asRequests(a *testAS) int {
	return a.count("GET /.well-known/oauth-authorization-server") + a.count("GET /.well-known/openid-configuration") +
		a.count("POST /register") + a.count("GET /authorize") + a.count("POST /token")
}

// Protected-resource metadata for another resource is refused (RFC 9728 §3.3) before anything reaches the
// authorization server, with the refusal as a fact.
func TestResourceMismatchRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.as.prmResource = "https://evil.example.com/mcp"
	var ch channels
	err := f.replica().Challenge(ch.ctx(context.Background()), f.server("user-1"), f.challenge())
	if !errors.Is(err, mcpauth.ErrRefusedMetadata) {
		t.Fatalf("Challenge = %v, want ErrRefusedMetadata", err)
	}
	if n := asRequests(f.as); n != 0 {
		t.Errorf("%d requests reached the authorization server", n)
	}
	if !ch.has(facts.MCPAuthorizationRefused) {
		t.Errorf("facts %q, want %s", ch.names, facts.MCPAuthorizationRefused)
	}
	if len(f.urls) != 0 {
		t.Error("an authorization URL was handed to the host")
	}
}

// A resource that is a path prefix of the server's URL, on its origin, is the server's (RFC 9728 §3.3 as MCP
// applies it); one on another port is not.
func TestResourcePrefix(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		resource string
		ok       bool
	}{{"", true}, {"/", true}, {"/mcp", true}, {"/mc", false}, {"/mcp/deeper", false}} {
		f := newFixture(t)
		f.as.prmResource = f.as.srv.URL + tc.resource
		err := f.replica().Challenge(context.Background(), f.server("user-1"), f.challenge())
		if got := errors.Is(err, mcpauth.ErrAuthorizationRequired); got != tc.ok {
			t.Errorf("resource %q: Challenge = %v, accepted %v, want %v", tc.resource, err, got, tc.ok)
		}
	}
	f := newFixture(t)
	f.as.prmResource = strings.Replace(f.as.srv.URL, "127.0.0.1", "localhost", 1) + "/mcp"
	if err := f.replica().Challenge(context.Background(), f.server("user-1"), f.challenge()); !errors.Is(err, mcpauth.ErrRefusedMetadata) {
		t.Errorf("a resource on another host: Challenge = %v, want ErrRefusedMetadata", err)
	}
}

// By default the outbound guard refuses a metadata URL at a loopback or private address: nothing is sent there.
func TestMetadataAtPrivateAddressRefused(t *testing.T) {
	t.Parallel()
	var hit atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hit.Add(1) }))
	t.Cleanup(srv.Close)
	for _, metadata := range []string{srv.URL + "/.well-known/oauth-protected-resource/mcp",
		"https://10.1.2.3/.well-known/oauth-protected-resource", "https://169.254.169.254/latest/meta-data"} {
		c, err := mcpauth.New(mcpauth.Config{RedirectURL: "https://agent.example/callback", Register: true,
			OnAuthorization: func(context.Context, mcpauth.AuthorizationRequest) error { return nil }})
		if err != nil {
			t.Fatal(err)
		}
		var ch channels
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = c.Challenge(ch.ctx(ctx), mcpauth.Server{Subject: "user-1", Name: "mcp", URL: srv.URL + "/mcp"},
			mcpauth.Challenge{Status: http.StatusUnauthorized, ResourceMetadata: metadata})
		cancel()
		if !errors.Is(err, mcpauth.ErrRefused) {
			t.Errorf("%s: Challenge = %v, want ErrRefused", metadata, err)
		}
		if !ch.has(facts.MCPAuthorizationRefused) {
			t.Errorf("%s: facts %q, want %s", metadata, ch.names, facts.MCPAuthorizationRefused)
		}
	}
	if hit.Load() != 0 {
		t.Errorf("%d requests reached the loopback server", hit.Load())
	}
}

// A metadata URL that redirects to another origin is refused, even with loopback allowed: the other origin gets
// nothing.
func TestMetadataRedirectToAnotherOriginRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	other := newTestAS(t)
	f.as.redirectPRM = other.srv.URL + "/.well-known/oauth-protected-resource/mcp"
	err := f.replica().Challenge(context.Background(), f.server("user-1"), f.challenge())
	if !errors.Is(err, mcpauth.ErrRefused) {
		t.Fatalf("Challenge = %v, want ErrRefused", err)
	}
	if n := other.count(""); n != 0 {
		t.Errorf("%d requests reached the other origin", n)
	}
}

// A pre-registered client is presented only to the issuer and resources it is bound to: a client bound to
// another issuer, or to other resources, is never sent; one bound to this issuer and resource is.
func TestPreRegisteredClientBound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		issuer    string // "" is the test server's
		resources []string
		used      bool
	}{
		{"another issuer", "https://as.other.example", nil, false},
		{"another resource", "", []string{"https://other.example/mcp"}, false},
		{"bound", "", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			issuer, resources := tc.issuer, tc.resources
			if issuer == "" {
				issuer = f.as.srv.URL
			}
			if resources == nil {
				resources = []string{f.as.serverURL()}
			}
			var asked []string
			var mu sync.Mutex
			c := f.replica(func(cfg *mcpauth.Config) {
				cfg.Register = false
				cfg.Registered = func(iss, resource string) (mcpauth.RegisteredClient, bool) {
					mu.Lock()
					asked = append(asked, iss)
					mu.Unlock()
					return mcpauth.RegisteredClient{Issuer: issuer, Resources: resources, ClientID: "pre-registered",
						Secret: "pre-registered-secret-canary"}, true
				}
			})
			err := c.Challenge(context.Background(), f.server("user-1"), f.challenge())
			if !tc.used {
				if !errors.Is(err, mcpauth.ErrNoClient) {
					t.Fatalf("Challenge = %v, want ErrNoClient", err)
				}
				if n := f.as.count("GET /authorize") + f.as.count("POST /token"); n != 0 {
					t.Errorf("%d requests reached the authorization or token endpoint", n)
				}
				return
			}
			r := <-f.urls
			if _, err := c.CompleteAuthorization(context.Background(), userStep(t, r.AuthorizationURL), "user-1"); err != nil {
				t.Fatal(err)
			}
			if len(f.as.clientIDs) != 1 || f.as.clientIDs[0] != "pre-registered" {
				t.Errorf("the authorization requests' client_id: %q", f.as.clientIDs)
			}
		})
	}
}

// The 2025-03-26 rule is narrow: metadata at the MCP server's origin whose issuer has that origin (and a path)
// is accepted; an issuer of another origin is refused, before any authorization request.
func TestLegacyIssuerRule(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.as.noPRM, f.as.issuer = true, "" // the issuer is set per case below
	f.as.issuer = f.as.srv.URL + "/oauth"
	if err := f.replica().Challenge(context.Background(), f.server("user-1"), f.challenge()); !errors.Is(err, mcpauth.ErrAuthorizationRequired) {
		t.Fatalf("an issuer of the server's origin: Challenge = %v, want ErrAuthorizationRequired", err)
	}
	g := newFixture(t)
	g.as.noPRM, g.as.issuer = true, "https://as.evil.example"
	if err := g.replica().Challenge(context.Background(), g.server("user-1"), g.challenge()); !errors.Is(err, mcpauth.ErrRefusedMetadata) {
		t.Fatalf("an issuer of another origin: Challenge = %v, want ErrRefusedMetadata", err)
	}
	if n := g.as.count("GET /authorize") + g.as.count("POST /register"); n != 0 {
		t.Errorf("%d requests after the refusal", n)
	}
}

// grant completes an authorization for user-1 on a replica and returns the fixture's clock control.
func grant(t *testing.T, f *fixture) (advance func(time.Duration)) {
	t.Helper()
	var mu sync.Mutex
	now := time.Now()
	f.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	r := f.start(context.Background(), f.replica(), "user-1")
	if _, err := f.replica().CompleteAuthorization(context.Background(), userStep(t, r.AuthorizationURL), "user-1"); err != nil {
		t.Fatal(err)
	}
	return func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
}

// Two replicas refreshing the same grant at once spend its rotating refresh token once: the test server fails a
// reused one; both replicas end with the one new token.
func TestRefreshSpentOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	advance := grant(t, f)
	ctx := context.Background()
	replicas := []*mcpauth.Client{f.replica(), f.replica(), f.replica()}
	first := make([]string, len(replicas))
	for i, r := range replicas {
		tok, err := r.Token(ctx, f.server("user-1"))
		if err != nil || tok == "" {
			t.Fatalf("Token = %q, %v", tok, err)
		}
		first[i] = tok
	}
	advance(time.Hour - 30*time.Second) // within RefreshBefore of the expiry
	f.as.mu.Lock()
	f.as.expiresIn = 7200
	f.as.mu.Unlock()
	toks := make([]string, len(replicas))
	var wg sync.WaitGroup
	for i, r := range replicas {
		wg.Go(func() {
			var err error
			if toks[i], err = r.Token(ctx, f.server("user-1")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	f.as.mu.Lock()
	refreshes, reused := f.as.refreshes, f.as.reused
	f.as.mu.Unlock()
	if refreshes != 1 || reused != 0 {
		t.Errorf("%d refreshes, %d reuses of a spent refresh token; want 1 and 0", refreshes, reused)
	}
	for i, tok := range toks {
		if tok == first[i] || tok != toks[0] {
			t.Errorf("replica %d: token %q after the refresh, want the one new token %q", i, tok, toks[0])
		}
	}
}

// A 401 on a grant that has a refresh token refreshes it; a refresh the server refuses (invalid_grant) drops the
// grant and goes back to the user's step.
func TestRefreshOnChallenge(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	grant(t, f)
	ctx := context.Background()
	c := f.replica()
	before, _ := c.Token(ctx, f.server("user-1"))
	if err := c.Challenge(ctx, f.server("user-1"), f.challenge()); err != nil {
		t.Fatalf("Challenge with a refresh token = %v, want nil", err)
	}
	after, _ := c.Token(ctx, f.server("user-1"))
	if after == before || after == "" || f.as.refreshes != 1 {
		t.Fatalf("token %q after %q, %d refreshes", after, before, f.as.refreshes)
	}
	f.as.mu.Lock()
	f.as.refuseRefresh = true
	f.as.mu.Unlock()
	var ch channels
	if err := c.Challenge(ch.ctx(ctx), f.server("user-1"), f.challenge()); !errors.Is(err, mcpauth.ErrAuthorizationRequired) {
		t.Fatalf("Challenge after invalid_grant = %v, want ErrAuthorizationRequired", err)
	}
	if len(f.urls) != 1 {
		t.Errorf("%d authorization URLs handed to the host, want 1", len(f.urls))
	}
	if tok, _ := f.replica().Token(ctx, f.server("user-1")); tok != "" {
		t.Errorf("the refused grant still serves %q; requests %q", tok, f.as.requests)
	}
	ch.mu.Lock()
	noSecretIn(t, "the facts", strings.Join(ch.facts, "\n"), f.as.canaries()...)
	ch.mu.Unlock()
}

// A registration is stored and reused; one the token endpoint no longer knows (invalid_client) is dropped, and
// registering again is bounded per issuer (MaxRegistrations within the hour).
func TestDynamicRegistrationBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	c := f.replica(func(cfg *mcpauth.Config) { cfg.MaxRegistrations = 1 })
	first := f.start(ctx, c, "user-1")
	f.start(ctx, f.replica(), "user-2") // another replica reuses the stored registration
	if n := f.as.count("POST /register"); n != 1 {
		t.Fatalf("%d registrations for two authorizations, want 1 (stored and reused)", n)
	}
	f.as.mu.Lock()
	f.as.rejectClient = true
	f.as.mu.Unlock()
	if _, err := c.CompleteAuthorization(ctx, userStep(t, first.AuthorizationURL), "user-1"); err == nil {
		t.Fatal("the exchange with a client the server no longer knows succeeded")
	}
	if err := c.Challenge(ctx, f.server("user-1"), f.challenge()); !errors.Is(err, mcpauth.ErrNoClient) {
		t.Errorf("Challenge past the bound = %v, want ErrNoClient", err)
	}
	if n := f.as.count("POST /register"); n != 1 {
		t.Errorf("%d registrations, want 1: the bound", n)
	}
}

// A token that lives less than twice Config.RefreshBefore (30s against a minute) is refreshed once it is past
// half its life, not on every request: Token serves it as it is at first, refreshes it once after 16s, and
// serves the new one as it is.
func TestShortLivedTokenRefreshedAtHalfLife(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.as.mu.Lock()
	f.as.expiresIn = 30
	f.as.mu.Unlock()
	advance := grant(t, f)
	ctx := context.Background()
	c := f.replica()
	refreshes := func() int { f.as.mu.Lock(); defer f.as.mu.Unlock(); return f.as.refreshes }
	first, _ := c.Token(ctx, f.server("user-1"))
	if again, _ := c.Token(ctx, f.server("user-1")); again != first || first == "" || refreshes() != 0 {
		t.Fatalf("a fresh 30s token: %q then %q, %d refreshes; want it served as it is", first, again, refreshes())
	}
	advance(16 * time.Second)
	second, _ := c.Token(ctx, f.server("user-1"))
	third, _ := c.Token(ctx, f.server("user-1"))
	if second == first || third != second || refreshes() != 1 {
		t.Errorf("past half its life: %q then %q, %d refreshes; want one new token, refreshed once", second, third, refreshes())
	}
}
