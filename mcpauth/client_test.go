package mcpauth_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/mcpauth"
	"github.com/commonagents-go/tool/store"
	"github.com/commonagents-go/tool/store/postgres"
)

// sharedStore returns the Store replicas share in a test: PostgreSQL when TOOL_TEST_POSTGRES_DSN is set (a
// connection per call: one per replica), else a memory store given once per test.
func sharedStore(t *testing.T, mem store.Store) store.Store {
	t.Helper()
	dsn := os.Getenv("TOOL_TEST_POSTGRES_DSN")
	if dsn == "" {
		return mem
	}
	s, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// fixture is a test authorization server and what replicas of a Client share: a Store, a sealing key, a key
// prefix of the test's own.
type fixture struct {
	t      *testing.T
	as     *testAS
	mem    store.Store
	sealer mcpauth.Sealer
	prefix string
	now    func() time.Time
	urls   chan mcpauth.AuthorizationRequest
}

func newFixture(t *testing.T) *fixture {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	sealer, err := mcpauth.NewAESGCM(mcpauth.SealingKey{ID: "k1", Key: key})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, as: newTestAS(t), mem: store.NewMemory(), sealer: sealer,
		prefix: "test/" + hex.EncodeToString(key[:8]) + "/", now: time.Now, urls: make(chan mcpauth.AuthorizationRequest, 16)}
}

// replica returns a new Client over the fixture's Store (a new connection with PostgreSQL); edit changes its
// configuration first.
func (f *fixture) replica(edit ...func(*mcpauth.Config)) *mcpauth.Client {
	cfg := mcpauth.Config{
		RedirectURL:   "https://agent.example/callback",
		Register:      true,
		RefreshTokens: true,
		Store:         sharedStore(f.t, f.mem),
		Sealer:        f.sealer,
		KeyPrefix:     f.prefix,
		HTTPClient:    mcpauth.Guard{AllowLoopback: true}.Client(),
		Now:           func() time.Time { return f.now() },
		OnAuthorization: func(_ context.Context, r mcpauth.AuthorizationRequest) error {
			f.urls <- r
			return nil
		},
	}
	for _, e := range edit {
		e(&cfg)
	}
	c, err := mcpauth.New(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

func (f *fixture) server(subject string) mcpauth.Server {
	return mcpauth.Server{TaskID: "task-1", CallID: "call-1", Subject: subject, Name: "mcp", URL: f.as.serverURL()}
}

func (f *fixture) challenge() mcpauth.Challenge {
	return mcpauth.Challenge{Status: http.StatusUnauthorized, Error: "invalid_token",
		ResourceMetadata: f.as.srv.URL + "/.well-known/oauth-protected-resource/mcp"}
}

// start runs a challenge on c for subject, which must end with the URL handed to the host, and returns it.
func (f *fixture) start(ctx context.Context, c *mcpauth.Client, subject string) mcpauth.AuthorizationRequest {
	f.t.Helper()
	if err := c.Challenge(ctx, f.server(subject), f.challenge()); !errors.Is(err, mcpauth.ErrAuthorizationRequired) {
		f.t.Fatalf("Challenge = %v, want ErrAuthorizationRequired", err)
	}
	select {
	case r := <-f.urls:
		return r
	default:
		f.t.Fatal("no authorization URL was handed to the host")
	}
	return mcpauth.AuthorizationRequest{}
}

// userStep GETs the authorization URL without following the redirect: the callback's query.
func userStep(t *testing.T, authURL string) url.Values {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Fatalf("the authorization server answered %s, Location %q", resp.Status, resp.Header.Get("Location"))
	}
	return loc.Query()
}

// channels records what a Reporter receives: the secrets the Client reported, and its facts as JSON.
type channels struct {
	mu      sync.Mutex
	secrets []string
	facts   []string
	names   []string
}

func (c *channels) ctx(ctx context.Context) context.Context {
	return mcpauth.ContextWithReporter(ctx, mcpauth.Reporter{
		Secret: func(v string) { c.mu.Lock(); c.secrets = append(c.secrets, v); c.mu.Unlock() },
		Fact: func(name string, data map[string]any) {
			raw, _ := json.Marshal(data)
			c.mu.Lock()
			c.facts, c.names = append(c.facts, string(raw)), append(c.names, name)
			c.mu.Unlock()
		},
	})
}

func (c *channels) has(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.names {
		if n == name {
			return true
		}
	}
	return false
}

// encodings are the forms a secret may take in a channel.
func encodings(v string) map[string]string {
	j, _ := json.Marshal(v)
	return map[string]string{"raw": v, "query-escaped": url.QueryEscape(v), "base64": base64.StdEncoding.EncodeToString([]byte(v)),
		"base64url": base64.RawURLEncoding.EncodeToString([]byte(v)), "json": strings.Trim(string(j), `"`)}
}

// noSecretIn fails t for each of secrets found in text, in any encoding.
func noSecretIn(t *testing.T, channel, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if s == "" {
			continue
		}
		for enc, form := range encodings(s) {
			if strings.Contains(text, form) {
				t.Errorf("%s holds a secret (%s, %s)", channel, s, enc)
			}
		}
	}
}

// The user's step ends the call; the callback completes on another replica; the first replica then finds the
// grant at its next challenge, and a third, fresh replica finds it at its first Token. PKCE S256, state,
// resource in both requests and the RFC 9207 iss are checked by the test server.
func TestCompleteOnAnotherReplica(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	a, b := f.replica(), f.replica()
	var ch channels
	r := f.start(ch.ctx(ctx), a, "user-1")
	if r.Subject != "user-1" || r.Server != "mcp" || r.Resource != f.as.serverURL() || r.Issuer != f.as.srv.URL ||
		r.TaskID != "task-1" || r.CallID != "call-1" {
		t.Errorf("the request handed to the host: %+v", r)
	}
	if !strings.Contains(r.AuthorizationURL, "scope=read+offline_access") {
		t.Errorf("the authorization URL asks %q, want the PRM's scopes_supported and offline_access", r.AuthorizationURL)
	}
	done, err := b.CompleteAuthorization(ctx, userStep(t, r.AuthorizationURL), "user-1")
	if err != nil {
		t.Fatal(err)
	}
	if done.Subject != "user-1" || done.TaskID != "task-1" || done.Server != "mcp" || done.Resource != f.as.serverURL() {
		t.Errorf("Completion = %+v", done)
	}
	if got := f.as.form.Get("resource"); got != f.as.serverURL() {
		t.Errorf("the token request's resource = %q", got)
	}
	if err := a.Challenge(ch.ctx(ctx), f.server("user-1"), f.challenge()); err != nil {
		t.Fatalf("the first replica's next challenge: %v", err)
	}
	tokA, err := a.Token(ctx, f.server("user-1"))
	if err != nil || !strings.HasPrefix(tokA, "canary-access-") {
		t.Fatalf("Token on the first replica = %q, %v", tokA, err)
	}
	tokC, err := f.replica().Token(ctx, f.server("user-1"))
	if err != nil || tokC != tokA {
		t.Fatalf("Token on a fresh replica = %q, %v; want %q", tokC, err, tokA)
	}
	if tok, _ := f.replica().Token(ctx, f.server("user-2")); tok != "" {
		t.Errorf("another user's Token = %q, want none", tok)
	}
	grants, err := b.Grants(ctx, "user-1")
	if err != nil || len(grants) != 1 || grants[0].Issuer != f.as.srv.URL || !grants[0].Refreshable {
		t.Fatalf("Grants = %+v, %v", grants, err)
	}
	if err := b.Revoke(ctx, "user-1", f.as.serverURL()); err != nil {
		t.Fatal(err)
	}
	if len(f.as.revoked) != 1 || !strings.HasPrefix(f.as.revoked[0], "canary-refresh-") {
		t.Errorf("revoked at the authorization server: %q, want the refresh token", f.as.revoked)
	}
	if tok, _ := f.replica().Token(ctx, f.server("user-1")); tok != "" {
		t.Errorf("Token after Revoke = %q, want none", tok)
	}
	if !ch.has(facts.MCPAuthorizationRequired) || !ch.has(facts.MCPAuthorized) {
		t.Errorf("facts %q, want %s and %s", ch.names, facts.MCPAuthorizationRequired, facts.MCPAuthorized)
	}
}

// A state is completed once, on whichever replica comes first: of concurrent completions exactly one wins, and
// a replay, an unknown state or an expired one is ErrUnknownState. A callback for another end user is refused and
// leaves the authorization pending for its own.
func TestCompletionRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var mu sync.Mutex
	now := time.Now()
	f.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	ctx := context.Background()
	a := f.replica()
	callback := userStep(t, f.start(ctx, a, "user-1").AuthorizationURL)

	if _, err := f.replica().CompleteAuthorization(ctx, callback, "user-2"); !errors.Is(err, mcpauth.ErrSubjectMismatch) {
		t.Errorf("another user's completion = %v, want ErrSubjectMismatch", err)
	}
	foreign := url.Values{"code": {callback.Get("code")}, "state": {"forged-state-value"}}
	if _, err := a.CompleteAuthorization(ctx, foreign, "user-1"); !errors.Is(err, mcpauth.ErrUnknownState) {
		t.Errorf("a foreign state = %v, want ErrUnknownState", err)
	}
	replicas := []*mcpauth.Client{a, f.replica(), f.replica(), f.replica()}
	var wg sync.WaitGroup
	errs := make([]error, len(replicas))
	for i, r := range replicas {
		wg.Go(func() { _, errs[i] = r.CompleteAuthorization(ctx, callback, "user-1") })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, mcpauth.ErrUnknownState):
			t.Errorf("a losing completion = %v, want ErrUnknownState", err)
		}
	}
	if won != 1 {
		t.Errorf("%d completions of one state won, want 1", won)
	}
	if _, err := a.CompleteAuthorization(ctx, callback, "user-1"); !errors.Is(err, mcpauth.ErrUnknownState) {
		t.Errorf("a replay = %v, want ErrUnknownState", err)
	}

	late := userStep(t, f.start(ctx, a, "user-3").AuthorizationURL)
	mu.Lock()
	now = now.Add(mcpauth.DefaultPendingTTL + time.Second)
	mu.Unlock()
	if _, err := a.CompleteAuthorization(ctx, late, "user-3"); !errors.Is(err, mcpauth.ErrUnknownState) {
		t.Errorf("an expired state = %v, want ErrUnknownState", err)
	}
}

// RFC 9207: a callback whose iss is another authorization server's is refused (a mix-up).
func TestCompletionIssuerMismatch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	a := f.replica()
	callback := userStep(t, f.start(ctx, a, "user-1").AuthorizationURL)
	callback.Set("iss", "https://attacker.example")
	if _, err := a.CompleteAuthorization(ctx, callback, "user-1"); !errors.Is(err, mcpauth.ErrIssuerMismatch) {
		t.Errorf("CompleteAuthorization = %v, want ErrIssuerMismatch", err)
	}
}

// A pending authorization survives a restart of the replica that started it: with a sealing key, a new Client
// over the same Store completes it. Without one, nothing secret is written, and only the starting Client can.
func TestPendingSurvivesRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("sealed", func(t *testing.T) {
		f := newFixture(t)
		callback := userStep(t, f.start(ctx, f.replica(), "user-1").AuthorizationURL)
		if _, err := f.replica().CompleteAuthorization(ctx, callback, "user-1"); err != nil {
			t.Fatalf("completing after a restart: %v", err)
		}
	})
	t.Run("unsealed", func(t *testing.T) {
		f := newFixture(t)
		f.sealer = nil
		a := f.replica()
		callback := userStep(t, f.start(ctx, a, "user-1").AuthorizationURL)
		if _, err := f.replica().CompleteAuthorization(ctx, callback, "user-1"); err == nil ||
			errors.Is(err, mcpauth.ErrUnknownState) {
			t.Fatalf("completing on another replica without a sealing key = %v, want a failure", err)
		}
		callback = userStep(t, f.start(ctx, a, "user-1").AuthorizationURL)
		if _, err := a.CompleteAuthorization(ctx, callback, "user-1"); err != nil {
			t.Fatalf("completing on the starting replica: %v", err)
		}
		if tok, err := a.Token(ctx, f.server("user-1")); err != nil || tok == "" {
			t.Fatalf("Token = %q, %v", tok, err)
		}
		noSecretInStore(t, f, f.as.canaries()...)
	})
}

// noSecretInStore fails t for each secret found in any value under the fixture's prefix, in any encoding.
func noSecretInStore(t *testing.T, f *fixture, secrets ...string) {
	t.Helper()
	st := sharedStore(t, f.mem)
	keys, err := st.List(context.Background(), f.prefix)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) == 0 {
		t.Fatal("nothing stored: the check would be vacuous")
	}
	for _, k := range keys {
		v, err := st.Get(context.Background(), k)
		if err != nil {
			continue
		}
		noSecretIn(t, "the record "+k, string(v), secrets...)
	}
}

// Sealed records hold no token, refresh token, client secret or code in clear, in any encoding; the verifier and
// state the Client reported are not there either.
func TestStoreHoldsNoSecretInClear(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	var ch channels
	a := f.replica()
	r := f.start(ch.ctx(ctx), a, "user-1")
	if _, err := f.replica().CompleteAuthorization(ch.ctx(ctx), userStep(t, r.AuthorizationURL), "user-1"); err != nil {
		t.Fatal(err)
	}
	ch.mu.Lock()
	reported := append([]string(nil), ch.secrets...)
	factText := strings.Join(ch.facts, "\n")
	ch.mu.Unlock()
	if len(reported) < 4 {
		t.Fatalf("the Client reported %d secrets, want state, verifier, client secret, code, tokens", len(reported))
	}
	all := append(f.as.canaries(), reported...)
	noSecretInStore(t, f, all...)
	noSecretIn(t, "the facts", factText, all...)
}

// countingStore counts the reads that reach a Store.
type countingStore struct {
	store.SwapStore
	mu   sync.Mutex
	gets int
}

func (c *countingStore) Get(ctx context.Context, key string) ([]byte, error) {
	c.mu.Lock()
	c.gets++
	c.mu.Unlock()
	return c.SwapStore.Get(ctx, key)
}

// Token serves a valid grant from memory: the Store is read once per end user and server, not per request.
func TestTokenReadsTheStoreOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	grant(t, f)
	counting := &countingStore{SwapStore: sharedStore(t, f.mem).(store.SwapStore)}
	c := f.replica(func(cfg *mcpauth.Config) { cfg.Store = counting })
	for range 100 {
		if tok, err := c.Token(context.Background(), f.server("user-1")); err != nil || tok == "" {
			t.Fatalf("Token = %q, %v", tok, err)
		}
	}
	if tok, _ := c.Token(context.Background(), f.server("user-2")); tok != "" {
		t.Fatalf("user-2's Token = %q", tok)
	}
	for range 100 {
		_, _ = c.Token(context.Background(), f.server("user-2"))
	}
	if counting.gets != 2 {
		t.Errorf("%d Store reads for 202 requests of two users, want 2", counting.gets)
	}
}
