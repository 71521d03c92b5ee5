package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// oauthUpstream is a remote MCP server (the go-sdk's, streamable HTTP) behind OAuth, with its authorization
// server on the same origin: protected-resource metadata, authorization-server metadata, dynamic registration,
// the authorization endpoint (PKCE S256, resource, state), a token endpoint whose refresh tokens rotate and fail
// when reused, and revocation. An access token serves one tools/call: the next one is refused with a 401, which
// the next process answers with a refresh. Every token, code and secret it issues is a canary.
type oauthUpstream struct {
	srv *httptest.Server

	mu         sync.Mutex
	live       map[string]bool   // access tokens the MCP server accepts
	refreshes  map[string]bool   // refresh tokens not yet spent
	challenges map[string]string // code → code_challenge
	issued     []string
	refreshed  int
	machine    int // client credentials grants
	reused     int
	revoked    []string
	n          int
}

func newOAuthUpstream(t *testing.T) *oauthUpstream {
	t.Helper()
	u := &oauthUpstream{live: map[string]bool{}, refreshes: map[string]bool{}, challenges: map[string]string{}}
	s := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "whoami", Description: "Says hello."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello, authorized user"}}}, nil, nil
		})
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	u.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		base := u.srv.URL
		switch r.URL.Path {
		case "/mcp":
			tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			ok := u.live[tok]
			u.mu.Unlock()
			if !ok {
				w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", resource_metadata="`+base+
					`/.well-known/oauth-protected-resource/mcp", scope="mcp:tools"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			mcpHandler.ServeHTTP(w, r)
			if bytes.Contains(body, []byte(`"tools/call"`)) { // a token serves one call: the next process refreshes
				u.mu.Lock()
				delete(u.live, tok)
				u.mu.Unlock()
			}
			return
		case "/.well-known/oauth-protected-resource/mcp":
			writeJSONTo(w, http.StatusOK, map[string]any{"resource": base + "/mcp", "authorization_servers": []string{base}})
		case "/.well-known/oauth-authorization-server":
			writeJSONTo(w, http.StatusOK, map[string]any{"issuer": base, "authorization_endpoint": base + "/authorize",
				"token_endpoint": base + "/token", "registration_endpoint": base + "/register",
				"revocation_endpoint": base + "/revoke", "code_challenge_methods_supported": []string{"S256"},
				"response_types_supported": []string{"code"}, "scopes_supported": []string{"mcp:tools", "offline_access"},
				"grant_types_supported": []string{"authorization_code", "refresh_token", "client_credentials"}})
		case "/register":
			writeJSONTo(w, http.StatusCreated, map[string]any{"client_id": "cli-client", "client_secret": u.canary("secret"),
				"token_endpoint_auth_method": "client_secret_basic"})
		case "/authorize":
			q := r.URL.Query()
			if q.Get("code_challenge_method") != "S256" || q.Get("state") == "" || q.Get("resource") != base+"/mcp" {
				u.mu.Unlock()
				http.Error(w, "bad authorization request", http.StatusBadRequest)
				return
			}
			code := u.canary("code")
			u.challenges[code] = q.Get("code_challenge")
			back, _ := url.Parse(q.Get("redirect_uri"))
			back.RawQuery = url.Values{"code": {code}, "state": {q.Get("state")}}.Encode()
			http.Redirect(w, r, back.String(), http.StatusFound)
		case "/token":
			_ = r.ParseForm()
			f := r.PostForm
			switch f.Get("grant_type") {
			case "authorization_code":
				sum := sha256.Sum256([]byte(f.Get("code_verifier")))
				if want, ok := u.challenges[f.Get("code")]; !ok || want != base64.RawURLEncoding.EncodeToString(sum[:]) {
					writeJSONTo(w, http.StatusBadRequest, map[string]any{"error": "invalid_grant"})
					u.mu.Unlock()
					return
				}
				delete(u.challenges, f.Get("code"))
			case "client_credentials": // the gateway's own client, for listing tools (--discover-client-env)
				if id, secret, ok := r.BasicAuth(); !ok || id != "gw-client" || secret != "gw-secret" || f.Get("resource") != base+"/mcp" {
					writeJSONTo(w, http.StatusUnauthorized, map[string]any{"error": "invalid_client"})
					u.mu.Unlock()
					return
				}
				u.machine++
			case "refresh_token":
				if !u.refreshes[f.Get("refresh_token")] {
					u.reused++
					writeJSONTo(w, http.StatusBadRequest, map[string]any{"error": "invalid_grant"})
					u.mu.Unlock()
					return
				}
				delete(u.refreshes, f.Get("refresh_token"))
				u.refreshed++
			default:
				writeJSONTo(w, http.StatusBadRequest, map[string]any{"error": "unsupported_grant_type"})
				u.mu.Unlock()
				return
			}
			access, refresh := u.canary("access"), u.canary("refresh")
			u.live[access], u.refreshes[refresh] = true, true
			writeJSONTo(w, http.StatusOK, map[string]any{"access_token": access, "token_type": "Bearer",
				"expires_in": 3600, "refresh_token": refresh, "scope": "mcp:tools offline_access"})
		case "/revoke":
			_ = r.ParseForm()
			u.revoked = append(u.revoked, r.PostForm.Get("token"))
			delete(u.refreshes, r.PostForm.Get("token"))
		default:
			http.NotFound(w, r)
		}
		u.mu.Unlock()
	}))
	u.srv.Start()
	t.Cleanup(u.srv.Close)
	return u
}

// canary returns a fresh secret, remembered; u.mu is held.
func (u *oauthUpstream) canary(kind string) string {
	u.n++
	v := fmt.Sprintf("canary-%s-%d-%x", kind, u.n, sha256.Sum256([]byte(kind+fmt.Sprint(u.n))))[:40]
	u.issued = append(u.issued, v)
	return v
}

func writeJSONTo(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// authEnv is the environment of the tool processes of a test: their own config directory, loopback allowed.
func authEnv(t *testing.T) (env []string, config string) {
	config = t.TempDir()
	return append(os.Environ(), "XDG_CONFIG_HOME="+config, allowLoopbackEnv+"=1"), config
}

// runToolEnv runs the tool binary with env and returns its exit code and output.
func runToolEnv(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(toolBinary(t), args...)
	cmd.Env = env
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}

var authURLLine = regexp.MustCompile(`(?m)^  (http\S+/authorize\?\S+)$`)

// browserLogin runs `tool auth login server` and plays the browser: it reads the authorization URL from stderr,
// GETs it without following the redirect, and brings the callback to the loopback address it names; with stray,
// a callback with a forged state comes first, and must be answered 400. It returns what the command printed.
func browserLogin(t *testing.T, env []string, server string, stray bool) string {
	t.Helper()
	cmd := exec.Command(toolBinary(t), "auth", "login", server, "--timeout", "2m")
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var printed strings.Builder
	sc := bufio.NewScanner(stderr)
	browser := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for sc.Scan() {
		printed.WriteString(sc.Text() + "\n")
		m := authURLLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		resp, err := browser.Get(m[1])
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		back := resp.Header.Get("Location")
		if !strings.HasPrefix(back, "http://127.0.0.1:") {
			t.Fatalf("the authorization server sent the browser to %q, want the loopback callback", back)
		}
		if stray {
			forged, _ := url.Parse(back)
			q := forged.Query()
			q.Set("state", "forged-state")
			forged.RawQuery = q.Encode()
			if resp, err = http.Get(forged.String()); err != nil || resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("a stray callback: %v %v, want 400", err, resp)
			}
			resp.Body.Close()
		}
		resp, err = http.Get(back)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "You can close this tab") {
			t.Fatalf("the callback page: %s %s", resp.Status, page)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("tool auth login: %v\n%s", err, printed.String())
	}
	return printed.String()
}

// The command line's OAuth flow end to end, through the built binary: login registers, sends the user's browser
// to the authorization server and completes at the loopback callback; the grant is kept in a 0600 file under the
// user's config directory, sealed; status lists it; invoke (twice) and serve-mcp over stdio call the protected
// server with it, each process after the first refreshing the token on the server's 401, with the rotated
// refresh token the previous one stored (the server fails a reused one); logout revokes and forgets it, after which a call is
// authorization_required with a hint. No token, code or secret appears in any output or in the file.
func TestAuthLoginInvokeServeLogout(t *testing.T) {
	t.Parallel()
	up := newOAuthUpstream(t)
	server := up.srv.URL + "/mcp"
	env, config := authEnv(t)
	manifest := writeFile(t, "protected.yaml", "kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: protected\n"+
		"description: A protected server.\nmcp:\n  transport: streamable_http\n  url: "+server+"\nactions:\n"+
		"  - name: whoami\n    description: Says hello.\n    parameters:\n      properties: {}\n    execute:\n      mcp: {}\n")
	var outputs []string

	code, out, errOut := runToolEnv(t, env, "auth", "status")
	if code != exitOK || !strings.Contains(out, "no grants") {
		t.Fatalf("status before login: %d %q %q", code, out, errOut)
	}
	if code, _, errOut = runToolEnv(t, env, "auth", "logout", server); code != exitOK || !strings.Contains(errOut, "no grant for") {
		t.Fatalf("logout before login: %d %q", code, errOut)
	}
	outputs = append(outputs, browserLogin(t, env, server, false))

	dir := filepath.Join(config, configDirName)
	for name, want := range map[string]os.FileMode{"": 0o700, grantsFileName: 0o600, grantsKeyName: 0o600} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %o", filepath.Join(dir, name), fi.Mode().Perm(), err, want)
		}
	}
	code, out, errOut = runToolEnv(t, env, "auth", "status")
	outputs = append(outputs, out, errOut)
	if code != exitOK || !strings.Contains(out, server) || !strings.Contains(out, "mcp:tools") || !strings.Contains(out, "yes") {
		t.Fatalf("status after login: %d %q %q", code, out, errOut)
	}

	for round := 1; round <= 2; round++ {
		code, out, errOut = runToolEnv(t, env, "invoke", manifest, "whoami")
		outputs = append(outputs, out, errOut)
		if code != exitOK || !strings.Contains(out, "hello, authorized user") {
			t.Fatalf("invoke %d: %d %s %s", round, code, out, errOut)
		}
	}
	cmd := exec.Command(toolBinary(t), "serve-mcp", manifest)
	cmd.Env = env
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sess, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "protected"})
	if err != nil || res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "hello") {
		t.Errorf("serve-mcp over stdio: %v %+v", err, res)
	}
	_ = sess.Close()
	up.mu.Lock()
	refreshed, reused := up.refreshed, up.reused
	up.mu.Unlock()
	if refreshed != 2 || reused != 0 {
		t.Errorf("%d refreshes and %d reused refresh tokens, want 2 (one per process after the first) and 0", refreshed, reused)
	}

	code, out, errOut = runToolEnv(t, env, "auth", "logout", server)
	outputs = append(outputs, out, errOut)
	up.mu.Lock()
	revoked := len(up.revoked)
	up.mu.Unlock()
	if code != exitOK || revoked != 1 {
		t.Fatalf("logout: %d %q %q, %d revoked", code, out, errOut, revoked)
	}
	code, out, errOut = runToolEnv(t, env, "invoke", manifest, "whoami")
	outputs = append(outputs, out, errOut)
	if code != exitProblem || !strings.Contains(out, "authorization_required") || !strings.Contains(errOut, "tool auth login") {
		t.Errorf("invoke after logout: %d %s %s, want authorization_required and the hint", code, out, errOut)
	}

	file, _ := os.ReadFile(filepath.Join(dir, grantsFileName))
	up.mu.Lock()
	issued := append([]string(nil), up.issued...)
	up.mu.Unlock()
	for _, secret := range issued {
		for _, enc := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret)), url.QueryEscape(secret)} {
			for _, o := range append(outputs, string(file)) {
				if strings.Contains(o, enc) {
					t.Errorf("a secret issued by the server (%s...) appears in an output or the grants file", secret[:14])
				}
			}
		}
	}
}

// The auth command's mistakes are usage errors that say what is wrong; by default its OAuth requests refuse
// loopback and plain-http endpoints (the outbound guard), which TOOL_AUTH_ALLOW_LOOPBACK=1 allows; a stray
// callback (an unknown state) does not end a login, which still completes with the right one.
func TestAuthCommandLine(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"auth"}, "want login, logout or status"},
		{[]string{"auth", "signin", "https://mcp.example/mcp"}, `unknown subcommand "signin"`},
		{[]string{"auth", "login"}, "login wants one server URL, got 0"},
		{[]string{"auth", "login", "ftp://mcp.example/"}, `"ftp://mcp.example/" is not an http(s) URL`},
		{[]string{"auth", "login", "https://mcp.example/mcp", "--client-id", "x"}, "--client-id and --issuer go together"},
		{[]string{"auth", "status", "a", "b"}, "status wants one server URL, got 2"},
	} {
		code, out, errOut := runTool(t, tt.args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, tt.want) {
			t.Errorf("%q: %d %q %q, want a usage error saying %q", tt.args, code, out, errOut, tt.want)
		}
	}
	if code, out, _ := runTool(t, "help", "auth"); code != exitOK || !strings.Contains(out, "mcp-grants.json") {
		t.Errorf("help auth: %d %q", code, out)
	}

	up := newOAuthUpstream(t)
	server := up.srv.URL + "/mcp"
	env, _ := authEnv(t)
	strict := slices.DeleteFunc(slices.Clone(env), func(v string) bool { return strings.HasPrefix(v, allowLoopbackEnv+"=") })
	code, _, errOut := runToolEnv(t, strict, "auth", "login", server, "--timeout", "30s")
	if code != exitProblem || !strings.Contains(errOut, "refused by the outbound guard") {
		t.Errorf("login to a loopback authorization server by default: %d %q, want the guard's refusal", code, errOut)
	}

	browserLogin(t, env, server, true)
	if code, out, _ := runToolEnv(t, env, "auth", "status", server); code != exitOK || !strings.Contains(out, server) {
		t.Errorf("status %s: %d %q", server, code, out)
	}
}

// serve-mcp --discover lists a protected upstream with --discover-client-env's client credentials (the gateway's
// own grant, taken once); without them the load warns and serves no tool.
func TestServeMCPDiscoversAProtectedUpstream(t *testing.T) {
	t.Parallel()
	up := newOAuthUpstream(t)
	manifest := writeFile(t, "gw.yaml", "kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: gw\n"+
		"description: A protected upstream.\nmcp:\n  transport: streamable_http\n  url: "+up.srv.URL+"/mcp\n")
	env := append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "GW_ID=gw-client", "GW_SECRET=gw-secret",
		"GW_ISSUER="+up.srv.URL)
	tools := func(extra ...string) ([]string, string) {
		cmd := exec.Command(toolBinary(t), append([]string{"serve-mcp", manifest, "--discover"}, extra...)...)
		cmd.Env = env
		var stderr strings.Builder
		cmd.Stderr = &stderr
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		sess, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("serve-mcp %q: %v", extra, err)
		}
		res, err := sess.ListTools(ctx, nil)
		_ = sess.Close() // waits for the process, and for its stderr to be copied
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		return names, stderr.String()
	}
	names, _ := tools("--discover-client-env", "GW", "--auth-allow-loopback")
	up.mu.Lock()
	machine := up.machine
	up.mu.Unlock()
	if len(names) != 1 || machine != 1 {
		t.Errorf("with the client credentials: tools %q, %d grants; want the upstream's one tool, one grant", names, machine)
	}
	if names, stderr := tools(); len(names) != 0 || !strings.Contains(stderr, "authoriz") {
		t.Errorf("without them: tools %q, stderr %q; want none and the warning", names, stderr)
	}
	if code, _, errOut := runToolEnv(t, env, "serve-mcp", manifest, "--discover-client-env", "GW"); code != exitUsage ||
		!strings.Contains(errOut, "needs --discover") {
		t.Errorf("--discover-client-env without --discover: %d %q", code, errOut)
	}
}
