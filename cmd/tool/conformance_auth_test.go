package main

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/mcpauth"
	"github.com/commonagents-go/tool/runtime"
	"github.com/commonagents-go/tool/store"
	"github.com/commonagents-go/tool/store/postgres"
)

// authScenarios are the suite's auth/* client scenarios (0.1.16), each with its verdict for the mcp backend with
// mcpauth.Client (TestHelperConformanceAuthClient: one configuration for all of them). A scenario that fails is
// listed with the reason and skipped: its subtest would only restate it.
var authScenarios = []struct {
	name string
	pass bool
	why  string // why it fails
}{
	{"metadata-default", true, ""},
	{"metadata-var1", true, ""},
	{"metadata-var2", true, ""},
	{"metadata-var3", true, ""},
	{"basic-cimd", true, ""},
	{"scope-from-www-authenticate", true, ""},
	{"scope-from-scopes-supported", true, ""},
	{"scope-omitted-when-undefined", true, ""},
	{"scope-step-up", true, ""},
	{"scope-retry-limit", true, ""},
	{"token-endpoint-auth-basic", true, ""},
	{"token-endpoint-auth-post", true, ""},
	{"token-endpoint-auth-none", true, ""},
	{"pre-registration", true, ""},
	{"2025-03-26-oauth-metadata-backcompat", true, ""},
	{"2025-03-26-oauth-endpoint-fallback", true, ""},
	{"resource-mismatch", true, ""},
	{"offline-access-scope", true, ""},
	{"offline-access-not-supported", true, ""},
	{"client-credentials-jwt", true, ""},
	{"client-credentials-basic", true, ""},
	{"cross-app-access-complete-flow", true, ""},
}

// authReport is what TestHelperConformanceAuthClient saw, written to the file $AUTH_REPORT for the test that ran
// the suite: the suite passes a client that fails where it may (resource-mismatch, scope-retry-limit), so the
// library's own verdicts are checked here.
type authReport struct {
	Store       string   `json:"store"`        // "postgres" or "memory": what the two replicas share
	Attempts    int      `json:"attempts"`     // authorization URLs handed to the host
	Completed   int      `json:"completed"`    // completions, each on the other replica
	Kinds       []string `json:"kinds"`        // each call's result: "ok" or its error kind
	Facts       []string `json:"facts"`        // the mcp.* facts, in order
	Refused     bool     `json:"refused"`      // a mcp.authorization.refused fact was reported
	Hosts       []string `json:"hosts"`        // the origins mcpauth.Client sent requests to
	Leaks       []string `json:"leaks"`        // secrets found in a channel, by name and encoding
	Secrets     int      `json:"secrets"`      // how many secret values were looked for
	Problems    []string `json:"problems"`     // the helper's own failures
	ServerURL   string   `json:"server_url"`   //
	FinalOutput string   `json:"final_output"` // the last call's text
}

// TestMCPConformanceClientAuth: the mcp backend, with mcpauth.Client as TaskConfig.MCPAuthorizer, against the
// suite's OAuth-protected servers. The suite runs this test binary as its client (TestHelperConformanceAuthClient),
// which writes what it saw to a report the subtest checks: at most 3 authorizations per scenario, the
// resource-mismatch refusal without a request to the authorization server, no secret in any channel.
func TestMCPConformanceClientAuth(t *testing.T) {
	t.Parallel()
	conformanceSuite(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range authScenarios {
		name := "auth/" + sc.name
		t.Run(name, func(t *testing.T) {
			if !sc.pass {
				t.Skipf("fails: %s", sc.why)
			}
			report := filepath.Join(t.TempDir(), "report.json")
			command := fmt.Sprintf("env MCP_CONFORMANCE_CLIENT=%s AUTH_REPORT=%s %s -test.run=^TestHelperConformanceAuthClient$ --",
				name, report, self)
			ok, out := scenario(t, "client", command, name)
			if !ok {
				t.Errorf("%s fails:\n%s", name, out)
			}
			checkAuthReport(t, sc.name, report)
		})
	}
}

// checkAuthReport checks what the helper saw in one scenario.
func checkAuthReport(t *testing.T, name, path string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the helper's report: %v", err)
	}
	var r authReport
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("the helper's report: %v", err)
	}
	t.Logf("report: %s", raw)
	for _, p := range r.Problems {
		t.Errorf("helper: %s", p)
	}
	if os.Getenv("TOOL_TEST_POSTGRES_DSN") != "" && r.Store != "postgres" {
		t.Errorf("the replicas shared a %s store, want postgres", r.Store)
	}
	if r.Attempts > mcpauth.MaxAuthorizations {
		t.Errorf("%d authorizations, want at most %d", r.Attempts, mcpauth.MaxAuthorizations)
	}
	if len(r.Leaks) > 0 {
		t.Errorf("secrets leaked: %q", r.Leaks)
	}
	if r.Secrets == 0 && name != "resource-mismatch" {
		t.Errorf("no secret was looked for: the canary check saw nothing")
	}
	last := ""
	if len(r.Kinds) > 0 {
		last = r.Kinds[len(r.Kinds)-1]
	}
	switch name {
	case "resource-mismatch":
		server, _ := url.Parse(r.ServerURL)
		if !r.Refused || r.Attempts != 0 {
			t.Errorf("refused %v after %d authorizations, want a refusal before any", r.Refused, r.Attempts)
		}
		for _, h := range r.Hosts {
			if h != server.Scheme+"://"+server.Host {
				t.Errorf("a request to %s, beyond the MCP server's origin (the authorization server's?)", h)
			}
		}
		if last != runtime.KindAuthorizationRequired {
			t.Errorf("the call ended %q, want %s", last, runtime.KindAuthorizationRequired)
		}
	case "scope-retry-limit":
		if last != runtime.KindAccessDenied {
			t.Errorf("the call ended %q, want %s", last, runtime.KindAccessDenied)
		}
	case "client-credentials-jwt", "client-credentials-basic", "cross-app-access-complete-flow":
		if last != "ok" || r.Attempts != 0 {
			t.Errorf("calls %q with %d authorizations: want one that succeeds with no user step", r.Kinds, r.Attempts)
		}
	default:
		if last != "ok" || r.Completed == 0 || r.Completed != r.Attempts {
			t.Errorf("calls %q with %d authorizations, %d completed: want one that succeeds after each authorization completed",
				r.Kinds, r.Attempts, r.Completed)
		}
	}
}

// authManifest declares the scenarios' tool: a protected server refuses the listing at load.
func authManifest(url string) string {
	return `kind: commonagents.info/v1beta2/tool
namespace: conformance
name: protected
description: The tool of an OAuth-protected MCP server.
mcp:
  transport: streamable_http
  url: ` + url + `
actions:
  - name: test_tool
    description: The scenario's tool.
    parameters: {properties: {}}
    execute:
      mcp: {tool_name: test-tool}
`
}

// replica is one host replica in the helper: its own Tool, Store connection, mcpauth.Client and task.
type replica struct {
	client *mcpauth.Client
	task   *tool.Task
}

// TestHelperConformanceAuthClient is the suite's client for the auth/* scenarios: one mcpauth.Client
// configuration for all of them, on two replicas (two Tool values, two Clients, two connections to one PostgreSQL
// database when TOOL_TEST_POSTGRES_DSN is set, else one memory store). A call that ends authorization_required
// has handed its URL to the host; the "user" opens it without following the redirect (the suite's authorization
// server answers at once), the callback completes on the other replica, and the next call runs there.
func TestHelperConformanceAuthClient(t *testing.T) {
	if os.Getenv("MCP_CONFORMANCE_CLIENT") == "" {
		t.Skip("run by TestMCPConformanceClientAuth")
	}
	rep := &authReport{ServerURL: os.Args[len(os.Args)-1]}
	defer writeAuthReport(t, rep)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var given map[string]any // MCP_CONFORMANCE_CONTEXT: the credentials a scenario gives
	_ = json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &given)

	stores := replicaStores(ctx, t, rep)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	sealer, err := mcpauth.NewAESGCM(mcpauth.SealingKey{ID: "conformance-1", Key: key})
	if err != nil {
		t.Fatal(err)
	}
	prefix := "conformance/" + hex.EncodeToString(key[:6]) + "/" // a fresh namespace: the suite's ports repeat
	rec := &recorder{}
	id, secret, signer, crossApp := givenCredentials(t, given)
	rec.secret("context client_secret", secret)
	if pemKey, _ := given["private_key_pem"].(string); pemKey != "" {
		rec.secret("context private key", pemKey)
		if block, _ := pem.Decode([]byte(pemKey)); block != nil {
			rec.secret("context private key (DER)", string(block.Bytes))
		}
	}
	if xa := crossApp; xa != nil {
		tok, _ := xa.IDToken(ctx, "")
		rec.secret("context id token", tok)
	}
	urls := make(chan string, 8)
	var logs bytes.Buffer
	var logsMu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(lockedWriter{&logs, &logsMu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	const subject = "conformance-user"
	replicas := make([]replica, 2)
	for i := range replicas {
		guarded := mcpauth.Guard{AllowLoopback: true}.Client() // the suite's servers are on http://localhost
		guarded.Transport = &recording{base: guarded.Transport, rec: rec}
		c, err := mcpauth.New(mcpauth.Config{
			RedirectURL:       "http://localhost:3000/callback",
			ClientMetadataURL: "https://conformance-test.local/client-metadata.json",
			// The suite's context gives a pre-registered client for its authorization server, whose URL it
			// picks at random: bound here to the issuer and resource it is asked for.
			Registered: func(issuer, resource string) (mcpauth.RegisteredClient, bool) {
				return mcpauth.RegisteredClient{Issuer: issuer, Resources: []string{resource}, ClientID: id,
					Secret: secret, Key: signer, ClientCredentials: true}, id != ""
			},
			CrossApp:      crossApp,
			Register:      true,
			RefreshTokens: true,
			Store:         stores[i],
			Sealer:        sealer,
			KeyPrefix:     prefix,
			HTTPClient:    guarded,
			OnAuthorization: func(_ context.Context, r mcpauth.AuthorizationRequest) error {
				rep.Attempts++
				urls <- r.AuthorizationURL
				return nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		tl, err := tool.Load(ctx, []byte(authManifest(rep.ServerURL)), tool.WithLogger(logger),
			tool.WithObserver(tool.ObserverFunc(func(_ context.Context, f tool.Fact) { rec.fact(f) })))
		if err != nil {
			t.Fatal(err)
		}
		task, err := tl.NewTask(ctx, tool.TaskConfig{Subject: subject, MCPAuthorizer: c})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = task.Close(ctx) }()
		replicas[i] = replica{client: c, task: task}
	}
	for i := 0; i < 2*mcpauth.MaxAuthorizations; i++ {
		r := replicas[i%2]
		res, err := r.task.Invoke(ctx, "test_tool", nil)
		if err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("call %d: %v", i, err))
			rec.text(err.Error())
			break
		}
		rec.text(string(res.OutputJSON), res.Text())
		rep.FinalOutput = res.Text()
		if !res.IsError {
			rep.Kinds = append(rep.Kinds, "ok")
			break
		}
		rep.Kinds = append(rep.Kinds, res.Error.Kind)
		var u string
		select {
		case u = <-urls:
		default:
		}
		if res.Error.Kind != runtime.KindAuthorizationRequired || u == "" {
			break
		}
		callback, err := userStep(ctx, u, rec)
		if err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("the user's step: %v", err))
			break
		}
		done, err := replicas[(i+1)%2].client.CompleteAuthorization(ctx, callback, subject)
		if err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("completing on the other replica: %v", err))
			rec.text(err.Error())
			break
		}
		if done.Subject != subject || done.Server != "mcp" {
			rep.Problems = append(rep.Problems, fmt.Sprintf("completed for %q, server %q", done.Subject, done.Server))
		}
		rep.Completed++
	}
	logsMu.Lock()
	rec.text(logs.String())
	logsMu.Unlock()
	rec.finish(rep)
}

// givenCredentials reads the credentials of MCP_CONFORMANCE_CONTEXT: a client (id, secret or PKCS#8 key), and
// the identity provider of SEP-990. Host configuration, which a real host reads from its secret manager.
func givenCredentials(t *testing.T, given map[string]any) (id, secret string, key crypto.Signer, xa *mcpauth.CrossApp) {
	str := func(k string) string { s, _ := given[k].(string); return s }
	id, secret = str("client_id"), str("client_secret")
	if pemKey := str("private_key_pem"); pemKey != "" {
		block, _ := pem.Decode([]byte(pemKey))
		if block == nil {
			t.Fatal("private_key_pem: no PEM block")
		}
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		key = k.(crypto.Signer)
	}
	if endpoint := str("idp_token_endpoint"); endpoint != "" {
		idToken := str("idp_id_token")
		xa = &mcpauth.CrossApp{TokenEndpoint: endpoint, ClientID: str("idp_client_id"),
			IDToken: func(context.Context, string) (string, error) { return idToken, nil }}
	}
	return id, secret, key, xa
}

// replicaStores returns the Store of each replica: two connections to the test database, or one memory store.
func replicaStores(ctx context.Context, t *testing.T, rep *authReport) []store.Store {
	dsn := os.Getenv("TOOL_TEST_POSTGRES_DSN")
	if dsn == "" {
		rep.Store = "memory"
		m := store.NewMemory()
		return []store.Store{m, m}
	}
	rep.Store = "postgres"
	var out []store.Store
	for range 2 {
		s, err := postgres.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		out = append(out, s)
	}
	return out
}

func writeAuthReport(t *testing.T, rep *authReport) {
	if p := os.Getenv("AUTH_REPORT"); p != "" {
		raw, _ := json.Marshal(rep)
		if err := os.WriteFile(p, raw, 0o600); err != nil {
			t.Error(err)
		}
	}
}

// userStep GETs the authorization URL without following its redirect and returns the query of where it points:
// the callback's code, state and iss. The redirect's values are secrets the host must keep out of every channel.
func userStep(ctx context.Context, u string, rec *recorder) (url.Values, error) {
	c := mcpauth.Guard{AllowLoopback: true}.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	_ = resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		return nil, fmt.Errorf("the authorization server's redirect: %w", err)
	}
	au, _ := url.Parse(u)
	q := loc.Query()
	rec.secret("authorization url", u)
	rec.secret("state", au.Query().Get("state"))
	rec.secret("code", q.Get("code"))
	return q, nil
}

// recorder collects what the helper must check: the secrets seen on the wire (tokens, refresh tokens, client
// secrets, codes, state, PKCE verifiers), the channels a leak would show in (facts, logs, results, errors), and
// the origins mcpauth.Client sent requests to.
type recorder struct {
	mu       sync.Mutex
	secrets  map[string]string // value → name
	channels []string
	facts    []string
	refused  bool
	hosts    []string
}

func (r *recorder) secret(name, v string) {
	if len(v) < 6 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.secrets == nil {
		r.secrets = map[string]string{}
	}
	r.secrets[v] = name
}

func (r *recorder) text(s ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.channels = append(r.channels, s...)
}

func (r *recorder) fact(f tool.Fact) {
	raw, _ := json.Marshal(f)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.channels = append(r.channels, string(raw))
	if strings.HasPrefix(f.Name, "mcp.") {
		r.facts = append(r.facts, f.Name)
	}
	if f.Name == facts.MCPAuthorizationRefused {
		r.refused = true
	}
}

// finish looks for every secret in every channel, in each encoding a channel may show it in.
func (r *recorder) finish(rep *authReport) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep.Facts, rep.Refused, rep.Hosts, rep.Secrets = r.facts, r.refused, r.hosts, len(r.secrets)
	all := strings.Join(r.channels, "\n")
	for v, name := range r.secrets {
		j, _ := json.Marshal(v)
		for enc, form := range map[string]string{"raw": v, "query-escaped": url.QueryEscape(v),
			"path-escaped": url.PathEscape(v), "base64": base64.StdEncoding.EncodeToString([]byte(v)),
			"base64url": base64.RawURLEncoding.EncodeToString([]byte(v)), "json": strings.Trim(string(j), `"`)} {
			if strings.Contains(all, form) {
				rep.Leaks = append(rep.Leaks, name+" ("+enc+")")
			}
		}
	}
	slices.Sort(rep.Leaks)
	rep.Leaks = slices.Compact(rep.Leaks)
}

// recording is mcpauth.Client's transport in the helper: it notes each request's origin, and the secrets of
// requests and responses (the PKCE verifier and client secrets it sends, the tokens and secrets it receives).
type recording struct {
	base http.RoundTripper
	rec  *recorder
}

func (t *recording) RoundTrip(req *http.Request) (*http.Response, error) {
	origin := req.URL.Scheme + "://" + req.URL.Host
	t.rec.mu.Lock()
	if !slices.Contains(t.rec.hosts, origin) {
		t.rec.hosts = append(t.rec.hosts, origin)
	}
	t.rec.mu.Unlock()
	if req.Body != nil && req.GetBody != nil {
		if b, err := req.GetBody(); err == nil {
			raw, _ := io.ReadAll(b)
			if form, err := url.ParseQuery(string(raw)); err == nil {
				for _, k := range []string{"code", "code_verifier", "client_secret", "refresh_token", "client_assertion",
					"assertion", "subject_token"} {
					t.rec.secret(k, form.Get(k))
				}
			}
		}
	}
	if u, p, ok := req.BasicAuth(); ok {
		t.rec.secret("client_secret", p)
		_ = u
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	raw, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	var body map[string]any
	if json.Unmarshal(raw, &body) == nil {
		for _, k := range []string{"access_token", "refresh_token", "client_secret", "registration_access_token", "id_token"} {
			if s, ok := body[k].(string); ok {
				t.rec.secret(k, s)
			}
		}
	}
	return resp, err
}

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
