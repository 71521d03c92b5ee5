package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/mcpauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

var authCommand = command{
	name:     "auth",
	synopsis: "login|logout|status [SERVER_URL] [--client-id ID --issuer URL [--client-secret-env VAR]] [--timeout D]",
	summary:  "authorize this user with remote MCP servers behind OAuth",
	detail: `Auth keeps this user's OAuth grants for remote MCP servers (streamable_http or
sse), which invoke, deliver and serve-mcp (over stdio) then use for the
manifest's servers, refreshing them as they expire.

  login SERVER_URL   runs the authorization code flow with PKCE: it prints the
                     authorization URL to stderr, waits for the browser to come
                     back to a loopback address (RFC 8252), and keeps the grant.
                     The client is registered dynamically, unless --client-id
                     names one registered with --issuer beforehand.
  logout SERVER_URL  revokes the grant at the authorization server, where it
                     offers revocation, and forgets it.
  status [SERVER_URL] lists the grants: server, issuer, scopes, expiry.

The grants are kept in mcp-grants.json under the user's config directory
(commonagents-tool, mode 0700; the file 0600), their tokens sealed with the
key in mcp-grants.key beside it. Metadata, registration and token endpoints on
private or loopback addresses, or over plain http, are refused unless
TOOL_AUTH_ALLOW_LOOPBACK=1 allows loopback ones.`,
	run: runAuth,
}

// localSubject is the end user the grants of the command line belong to: the config directory is the user's.
const localSubject = "local"

// redirectPortKey keeps the loopback port of the last login, so that a registration made for its redirect URL
// is reused by the next one.
const redirectPortKey = "tool/redirect-port"

// allowLoopbackEnv lets the command line's OAuth requests reach loopback addresses over http (local servers,
// tests).
const allowLoopbackEnv = "TOOL_AUTH_ALLOW_LOOPBACK"

func runAuth(ctx context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) int {
	clientID := fs.String("client-id", "", "a client `ID` registered beforehand with the authorization server --issuer")
	issuer := fs.String("issuer", "", "the authorization server (`URL`) that --client-id is registered with")
	secretEnv := fs.String("client-secret-env", "", "read --client-id's secret from the environment variable `VAR`")
	timeout := fs.Duration("timeout", 5*time.Minute, "how long login waits for the browser")
	pos, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) == 0 {
		return usageError(fs, "want login, logout or status")
	}
	sub, pos := pos[0], pos[1:]
	switch {
	case sub != "login" && sub != "logout" && sub != "status":
		return usageError(fs, "unknown subcommand %q: want login, logout or status", sub)
	case sub == "status" && len(pos) > 1, sub != "status" && len(pos) != 1:
		return usageError(fs, "%s wants one server URL, got %d arguments", sub, len(pos))
	case (*clientID == "") != (*issuer == ""):
		return usageError(fs, "--client-id and --issuer go together")
	case *secretEnv != "" && *clientID == "":
		return usageError(fs, "--client-secret-env needs --client-id")
	}
	server := ""
	if len(pos) == 1 {
		u, err := url.Parse(pos[0])
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return usageError(fs, "%q is not an http(s) URL", pos[0])
		}
		server = pos[0]
	}
	var rc *mcpauth.RegisteredClient
	if *clientID != "" {
		rc = &mcpauth.RegisteredClient{Issuer: *issuer, Resources: []string{server}, ClientID: *clientID}
		if *secretEnv != "" {
			if rc.Secret = os.Getenv(*secretEnv); rc.Secret == "" {
				return usageError(fs, "the environment variable %s is empty", *secretEnv)
			}
		}
	}
	var err error
	switch sub {
	case "login":
		err = authLogin(ctx, stderr, server, rc, *timeout)
	case "logout":
		err = authLogout(ctx, stderr, server)
	default:
		err = authStatus(ctx, stdout, server)
	}
	if err != nil {
		fmt.Fprintf(stderr, "tool auth %s: %v\n", sub, err)
		return exitProblem
	}
	return exitOK
}

// authHTTPClient is the guarded client of the command line's OAuth requests.
func authHTTPClient() *http.Client {
	return mcpauth.Guard{AllowLoopback: os.Getenv(allowLoopbackEnv) == "1"}.Client()
}

// localClient returns the mcpauth.Client of the local user's grants, or nil when there are none yet and create is
// false. redirect is the login's callback ("" outside a login: no user step then, and no registration).
func localClient(create bool, redirect string, rc *mcpauth.RegisteredClient, onAuth func(context.Context, mcpauth.AuthorizationRequest) error) (*mcpauth.Client, *grantFile, error) {
	st, sealer, ok, err := localGrants(create)
	if err != nil || !ok {
		return nil, nil, err
	}
	cfg := mcpauth.Config{RedirectURL: redirect, Store: st, Sealer: sealer, HTTPClient: authHTTPClient(),
		RefreshTokens: true, ClientName: "tool (commonagents-go)", OnAuthorization: onAuth}
	if redirect == "" {
		cfg.RedirectURL = "http://127.0.0.1/callback" // never used: no user step, no registration
	} else {
		cfg.Register = rc == nil
	}
	if rc != nil {
		cfg.Registered = func(issuer, resource string) (mcpauth.RegisteredClient, bool) { return *rc, true }
	}
	c, err := mcpauth.New(cfg)
	return c, st, err
}

// localAuthorizer is the Authorizer of invoke, deliver and serve-mcp over stdio: the local user's grants, nil
// when there are none.
func localAuthorizer() (mcpauth.Authorizer, error) {
	c, _, err := localClient(false, "", nil, nil)
	if err != nil || c == nil {
		return nil, err
	}
	return subjectAuthorizer{c}, nil
}

// subjectAuthorizer asks for the local user's grant whatever the task's subject.
type subjectAuthorizer struct{ c *mcpauth.Client }

func (a subjectAuthorizer) Token(ctx context.Context, s mcpauth.Server) (string, error) {
	s.Subject = localSubject
	return a.c.Token(ctx, s)
}

func (a subjectAuthorizer) Challenge(ctx context.Context, s mcpauth.Server, c mcpauth.Challenge) error {
	s.Subject = localSubject
	return a.c.Challenge(ctx, s, c)
}

// authHint is printed after a call that needs the user's authorization.
func authHint(stderr io.Writer, cmd string, res *tool.Result) {
	if res != nil && res.Error != nil && res.Error.Kind == "authorization_required" {
		fmt.Fprintf(stderr, "tool %s: a remote MCP server needs your authorization: run 'tool auth login SERVER_URL' "+
			"with the server's URL from the manifest\n", cmd)
	}
}

func authLogin(ctx context.Context, stderr io.Writer, server string, rc *mcpauth.RegisteredClient, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	st, _, _, err := localGrants(true)
	if err != nil {
		return err
	}
	ln, err := listenLoopback(ctx, st)
	if err != nil {
		return err
	}
	defer ln.Close()
	redirect := "http://" + ln.Addr().String() + "/callback"
	asked := false
	c, _, err := localClient(true, redirect, rc, func(_ context.Context, r mcpauth.AuthorizationRequest) error {
		asked = true
		fmt.Fprintf(stderr, "Open this URL in your browser to authorize access to %s (issuer %s, scopes %q):\n\n  %s\n\n"+
			"Waiting for the browser (%s)...\n", r.URL, r.Issuer, strings.Join(r.Scopes, " "), r.AuthorizationURL, timeout)
		return nil
	})
	if err != nil {
		return err
	}
	ch, protected, err := challengeOf(ctx, server)
	if err != nil {
		return err
	}
	if !protected {
		fmt.Fprintf(stderr, "%s answers without authorization: nothing to do\n", server)
		return nil
	}
	s := mcpauth.Server{Subject: localSubject, Name: server, URL: server}
	err = c.Challenge(ctx, s, ch)
	switch {
	case err == nil:
		fmt.Fprintf(stderr, "authorized for %s already\n", server)
		return nil
	case !errors.Is(err, mcpauth.ErrAuthorizationRequired) || !asked:
		return err
	}
	done := make(chan error, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		got, err := c.CompleteAuthorization(r.Context(), r.URL.Query(), localSubject)
		switch {
		case errors.Is(err, mcpauth.ErrUnknownState), errors.Is(err, mcpauth.ErrSubjectMismatch):
			http.Error(w, "This is not the authorization tool is waiting for.", http.StatusBadRequest)
			return // a stray or replayed callback: keep waiting for the right one
		case err != nil:
			http.Error(w, "The authorization failed: "+html.EscapeString(err.Error()), http.StatusBadRequest)
		default:
			fmt.Fprintf(w, "<!doctype html><p>tool is authorized for %s. You can close this tab.</p>\n", html.EscapeString(got.URL))
			fmt.Fprintf(stderr, "authorized for %s (issuer %s, scopes %q)\n", got.URL, got.Issuer, strings.Join(got.Scopes, " "))
		}
		select {
		case done <- err:
		default:
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	defer func() { // the browser's page is written once its handler returns: let it finish
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("no answer from the browser within %s", timeout)
	}
}

// listenLoopback listens on 127.0.0.1 at the port of the last login when it is free, else at any port, and
// remembers the port.
func listenLoopback(ctx context.Context, st *grantFile) (net.Listener, error) {
	if last, err := st.Get(ctx, redirectPortKey); err == nil {
		if ln, err := net.Listen("tcp", "127.0.0.1:"+string(last)); err == nil {
			return ln, nil
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the browser: %w", err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	if err := st.Put(ctx, redirectPortKey, []byte(port)); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// challengeOf sends the server an MCP initialize without a token and returns its refusal; protected is false when
// it answers without one.
func challengeOf(ctx context.Context, server string) (c mcpauth.Challenge, protected bool, err error) {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",` +
		`"capabilities":{},"clientInfo":{"name":"tool auth","version":"1"}}}`
	hc := &http.Client{Timeout: 30 * time.Second}
	var resp *http.Response
	for _, method := range []string{http.MethodPost, http.MethodGet} { // an sse server takes a GET
		req, err := http.NewRequestWithContext(ctx, method, server, nil)
		if err != nil {
			return c, false, err
		}
		if method == http.MethodPost {
			req.Body = io.NopCloser(bytes.NewReader([]byte(body)))
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Accept", "application/json, text/event-stream")
		if resp, err = hc.Do(req); err != nil {
			return c, false, fmt.Errorf("reaching %s: %w", server, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusNotFound {
			break
		}
	}
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		if resp.StatusCode >= 300 {
			return c, false, fmt.Errorf("%s answered %s, not a challenge", server, resp.Status)
		}
		return c, false, nil
	}
	c.Status, c.Header = resp.StatusCode, resp.Header.Values("WWW-Authenticate")
	all, _ := oauthex.ParseWWWAuthenticate(c.Header)
	for _, ch := range all {
		if ch.Scheme == "bearer" {
			c.Error, c.ResourceMetadata = ch.Params["error"], ch.Params["resource_metadata"]
			c.Scopes = strings.Fields(ch.Params["scope"])
			break
		}
	}
	return c, true, nil
}

func authLogout(ctx context.Context, stderr io.Writer, server string) error {
	c, _, err := localClient(false, "", nil, nil)
	if err != nil {
		return err
	}
	if c == nil {
		fmt.Fprintf(stderr, "no grant for %s\n", server)
		return nil
	}
	if grants, err := c.Grants(ctx, localSubject); err == nil && !hasGrant(grants, server) {
		fmt.Fprintf(stderr, "no grant for %s\n", server)
		return nil
	}
	if err := c.Revoke(ctx, localSubject, server); err != nil {
		return fmt.Errorf("the grant is forgotten, but revoking it failed: %w", err)
	}
	fmt.Fprintf(stderr, "logged out of %s\n", server)
	return nil
}

// hasGrant reports whether grants hold one for server (the URLs compared as mcpauth canonicalises them: the
// scheme and host lower-case, the default port dropped).
func hasGrant(grants []mcpauth.Grant, server string) bool {
	for _, g := range grants {
		if sameServer(g.URL, server) {
			return true
		}
	}
	return false
}

func sameServer(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	if err1 != nil || err2 != nil {
		return a == b
	}
	return strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Hostname(), ub.Hostname()) &&
		port(ua) == port(ub) && strings.TrimSuffix(ua.EscapedPath(), "/") == strings.TrimSuffix(ub.EscapedPath(), "/")
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

func authStatus(ctx context.Context, stdout io.Writer, server string) error {
	c, _, err := localClient(false, "", nil, nil)
	if err != nil {
		return err
	}
	var grants []mcpauth.Grant
	if c != nil {
		if grants, err = c.Grants(ctx, localSubject); err != nil {
			return err
		}
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tISSUER\tSCOPES\tEXPIRES\tREFRESH")
	n := 0
	for _, g := range grants {
		if server != "" && !sameServer(g.URL, server) {
			continue
		}
		n++
		expires := "-"
		if !g.Expiry.IsZero() {
			expires = g.Expiry.Local().Format(time.RFC3339)
		}
		refresh := "no"
		if g.Refreshable {
			refresh = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", g.URL, g.Issuer, strings.Join(g.Scopes, " "), expires, refresh)
	}
	if n == 0 {
		if server != "" {
			return fmt.Errorf("no grant for %s: run 'tool auth login %s'", server, server)
		}
		fmt.Fprintln(stdout, "no grants: run 'tool auth login SERVER_URL'")
		return nil
	}
	return tw.Flush()
}
