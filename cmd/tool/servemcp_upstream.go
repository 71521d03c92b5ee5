package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/mcpauth"
	"github.com/commonagents-go/tool/mcpserve"
	"github.com/commonagents-go/tool/mcpserve/resource"
	"github.com/commonagents-go/tool/store/postgres"
	"github.com/mark3labs/mcp-go/server"
	"golang.org/x/oauth2"
)

// Behind the door (--resource-url), --upstream-auth gives the sessions' tasks the upstream grants of the door's
// user (an mcpauth.Client as TaskConfig.MCPAuthorizer): the client's own token goes no further than the door. When
// an upstream needs the user's authorization, the session's client is sent a URL-mode elicitation (or the call's
// -32042 error) whose URL is the gateway's connect link, never the authorization server's URL.
//
// The browser that opens the link, and later comes back to the callback, carries no token of the door's, so:
//   - the link holds, sealed (AES-GCM under the sealing key), the authorization URL, its end user and its end: it
//     opens on any replica with the key and tells nothing to whoever reads it;
//   - the connect route signs the browser in at the door's issuer (servemcp_login.go) and goes on only when the
//     signed-in user is the link's: a link handed to someone else binds nothing;
//   - it then sets a short-lived HttpOnly, SameSite=Lax cookie holding, sealed, the digest of the authorization's
//     state, its end user and its end, and redirects to the authorization server;
//   - the callback completes an authorization only for the browser holding the cookie of that very state, and
//     for the cookie's end user (mcpauth.Client.CompleteAuthorization's expected subject): the authorization
//     server's URL, or its callback, handed to another browser completes nothing.
//
// docs/security.md says what this defends against and what it leaves to the deployment.

// upstreamFlags holds serve-mcp's flags for authorizing upstream servers per user.
type upstreamFlags struct {
	enabled   bool
	clientEnv string // NAME: NAME_ID, NAME_SECRET, NAME_ISSUER: a client pre-registered with the upstreams' issuer
	sealEnv   string // NAME: a base64 AES key that seals grants, pending authorizations, links and cookies
	loginEnv  string // NAME: NAME_ID, NAME_SECRET: the gateway's client at the door's issuer, to sign browsers in
	skipLogin bool   // no sign-in at the connect link: the cookie binding alone
	storeEnv  string // NAME: a PostgreSQL DSN: grants and pending authorizations shared by the replicas
}

func upstreamAuthFlags(fs *flag.FlagSet) *upstreamFlags {
	u := &upstreamFlags{}
	fs.BoolVar(&u.enabled, "upstream-auth", false, "authorize the upstream MCP servers with each door user's own "+
		"OAuth grants, asking the user through their MCP client (URL-mode elicitation); needs --resource-url")
	fs.StringVar(&u.clientEnv, "upstream-client-env", "", "the OAuth client pre-registered with the upstreams' "+
		"authorization server: `NAME`_ID, NAME_SECRET (may be empty) and NAME_ISSUER; default: dynamic registration")
	fs.StringVar(&u.sealEnv, "upstream-seal-env", "", "the environment variable `NAME` holds a base64 AES key (16, "+
		"24 or 32 bytes; the same on every replica) sealing grants, pending authorizations and connect links; "+
		"default: a key of this process")
	fs.StringVar(&u.loginEnv, "upstream-login-client-env", "", "the gateway's OAuth client at the door's issuer "+
		"(`NAME`_ID, NAME_SECRET): a browser opening a connect link signs in there, and must be the link's user")
	fs.StringVar(&u.storeEnv, "upstream-store-env", "", "the environment variable `NAME` holds a PostgreSQL DSN: "+
		"grants and pending authorizations are kept there, for every replica (needs --upstream-seal-env); "+
		"default: this process's memory")
	fs.BoolVar(&u.skipLogin, "upstream-skip-login", false, "do not check who opens a connect link (a user who "+
		"hands their link to someone else has that person's upstream account bound to them; docs/security.md)")
	return u
}

// Routes of the upstream authorization, under the door's /mcp: published as --resource-url + /oauth/connect,
// /oauth/login and /oauth/callback.
const (
	connectPath  = "/mcp/oauth/connect"
	loginPath    = "/mcp/oauth/login"
	callbackPath = "/mcp/oauth/callback"
)

// connector is the gateway's side of the users' upstream authorizations: the Authorizer of the sessions' tasks, the
// connect and callback routes, and the waits of the calls whose users went to authorize. It is safe for concurrent
// use.
type connector struct {
	client *mcpauth.Client
	seal   mcpauth.Sealer
	public string // --resource-url without a trailing slash
	path   string // the cookie's path: the public path of the oauth routes
	secure bool   // https: the cookie is Secure
	stderr io.Writer
	now    func() time.Time
	login  *login          // nil: --upstream-skip-login
	store  *postgres.Store // nil: memory
	// notify sends notifications/elicitation/complete for an elicitation to the MCP session that asked, when it
	// lives on this replica; nil: none. Set before serving.
	notify  func(session, elicitation string)
	mu      sync.Mutex
	waiting map[string]chan struct{} // elicitation ID → closed when its callback completed here
}

// connector returns the upstream authorization for the door at resourceURL, nil when --upstream-auth is not given.
//
// With --upstream-store-env it opens the PostgreSQL Store within ctx; close ends it.
func (u *upstreamFlags) connector(ctx context.Context, resourceURL string, door *resource.Server, scopes []string,
	allowLoopback bool, clock tool.Clock, stderr io.Writer) (*connector, error) {
	if !u.enabled {
		if u.clientEnv != "" || u.sealEnv != "" || u.loginEnv != "" || u.skipLogin || u.storeEnv != "" {
			return nil, errors.New("--upstream-client-env, --upstream-seal-env, --upstream-store-env, " +
				"--upstream-login-client-env and --upstream-skip-login need --upstream-auth")
		}
		return nil, nil
	}
	if u.storeEnv != "" && u.sealEnv == "" {
		return nil, errors.New("--upstream-store-env needs --upstream-seal-env: the replicas open each other's " +
			"records with it, and no secret is written unsealed")
	}
	if door == nil {
		return nil, errors.New("--upstream-auth needs --resource-url: the door says whose grants a session uses")
	}
	if (u.loginEnv == "") == !u.skipLogin {
		return nil, errors.New("--upstream-auth needs --upstream-login-client-env (who opens a connect link is " +
			"checked), or --upstream-skip-login")
	}
	pub, err := url.Parse(strings.TrimSuffix(resourceURL, "/"))
	if err != nil || pub.Host == "" || (pub.Scheme != "https" && pub.Scheme != "http") {
		return nil, fmt.Errorf("--resource-url %q: want an absolute http(s) URL", resourceURL)
	}
	key, keyID := make([]byte, 32), "process"
	if u.sealEnv != "" {
		if key, err = base64.StdEncoding.DecodeString(os.Getenv(u.sealEnv)); err != nil || len(key) == 0 {
			return nil, fmt.Errorf("--upstream-seal-env %s: want a base64 AES key (16, 24 or 32 bytes)", u.sealEnv)
		}
		d := sha256.Sum256(key)
		keyID = base64.RawURLEncoding.EncodeToString(d[:6]) // names the key, tells nothing of it
	} else {
		_, _ = rand.Read(key)
	}
	seal, err := mcpauth.NewAESGCM(mcpauth.SealingKey{ID: keyID, Key: key})
	if err != nil {
		return nil, fmt.Errorf("--upstream-seal-env %s: %v", u.sealEnv, err)
	}
	guarded := mcpauth.Guard{AllowLoopback: allowLoopback}.Client()
	c := &connector{seal: seal, public: pub.String(), path: pub.Path + "/oauth/", secure: pub.Scheme == "https",
		stderr: stderr, now: clock.Now, waiting: map[string]chan struct{}{}}
	if u.loginEnv != "" {
		c.login = &login{door: door, resource: resourceURL, scopes: scopes, http: guarded,
			clientID: os.Getenv(u.loginEnv + "_ID"), secret: os.Getenv(u.loginEnv + "_SECRET")}
		if c.login.clientID == "" {
			return nil, fmt.Errorf("--upstream-login-client-env %s: %s_ID is empty or not set", u.loginEnv, u.loginEnv)
		}
	}
	cfg := mcpauth.Config{RedirectURL: c.public + "/oauth/callback", Register: u.clientEnv == "",
		ClientName: "tool serve-mcp", Sealer: seal, RefreshTokens: true, OnAuthorization: c.onAuthorization,
		HTTPClient: guarded, Now: clock.Now}
	if u.clientEnv != "" {
		rc := mcpauth.RegisteredClient{ClientID: os.Getenv(u.clientEnv + "_ID"), Secret: os.Getenv(u.clientEnv + "_SECRET"),
			Issuer: os.Getenv(u.clientEnv + "_ISSUER")}
		if rc.ClientID == "" || rc.Issuer == "" {
			return nil, fmt.Errorf("--upstream-client-env %s: %s_ID or %s_ISSUER is empty or not set", u.clientEnv,
				u.clientEnv, u.clientEnv)
		}
		cfg.Registered = func(issuer, resource string) (mcpauth.RegisteredClient, bool) {
			r := rc
			r.Resources = []string{resource} // any upstream of this issuer: the manifest names them
			return r, strings.TrimSuffix(issuer, "/") == strings.TrimSuffix(rc.Issuer, "/")
		}
	}
	if u.storeEnv != "" {
		dsn := os.Getenv(u.storeEnv)
		if dsn == "" {
			return nil, fmt.Errorf("--upstream-store-env %s: the variable is empty or not set", u.storeEnv)
		}
		if c.store, err = postgres.Open(ctx, dsn); err != nil {
			// postgres.Open never quotes the DSN
			return nil, fmt.Errorf("%w: --upstream-store-env %s: %w", errUpstreamStore, u.storeEnv, err)
		}
		cfg.Store = c.store
	}
	if c.client, err = mcpauth.New(cfg); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// errUpstreamStore is a Store that could not be opened: not a mistake of the command line.
var errUpstreamStore = errors.New("the upstream authorization's store")

// close ends the connector's Store, if it opened one; nil c is fine.
func (c *connector) close() {
	if c != nil && c.store != nil {
		_ = c.store.Close()
	}
}

// routes mounts the connect and callback routes on mux: outside the door, a browser carries no token.
func (c *connector) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET "+connectPath, c.connect)
	mux.HandleFunc("GET "+loginPath, c.loggedIn)
	mux.HandleFunc("GET "+callbackPath, c.callback)
}

// link is the content of a connect link, sealed.
type link struct {
	Subject string `json:"s"`
	Session string `json:"m,omitempty"` // the MCP session whose call asked
	Issuer  string `json:"o,omitempty"` // the door's issuer of the user, "" when unknown
	AuthURL string `json:"a"`
	ID      string `json:"i"`
	Expires int64  `json:"e"`
}

// binding is the content of the cookie the connect route sets, sealed.
type binding struct {
	State   string `json:"h"` // stateDigest of the authorization's state
	Subject string `json:"s"`
	Session string `json:"m,omitempty"`
	ID      string `json:"i"`
	Expires int64  `json:"e"`
}

// Associated data of the sealed values: a link does not open as a cookie, nor the reverse.
const (
	linkAAD    = "tool serve-mcp connect link v1"
	bindingAAD = "tool serve-mcp connect cookie v1"
)

func (c *connector) sealJSON(v any, aad string) (string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	sealed, err := c.seal.Seal(raw, []byte(aad))
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(sealed), nil
}

func (c *connector) openJSON(s, aad string, v any) bool {
	sealed, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return false
	}
	raw, err := c.seal.Open(sealed, []byte(aad))
	return err == nil && json.Unmarshal(raw, v) == nil
}

// stateDigest names a state in a cookie, and the cookie itself, without the state.
func stateDigest(state string) string {
	d := sha256.Sum256([]byte("tool serve-mcp state\x00" + state))
	return base64.RawURLEncoding.EncodeToString(d[:])
}

// cookieName is the name of the cookie of the authorization with state digest d: one per authorization, so that a
// user's two at once in one browser do not overwrite each other.
func (c *connector) cookieName(d string) string {
	if c.secure {
		return "__Secure-tool-oauth-" + d[:12]
	}
	return "tool-oauth-" + d[:12]
}

// onAuthorization hands an upstream's authorization URL to the user of the call: a URL-mode elicitation of the
// gateway's connect link, or, for a client without URL mode, the call's -32042 error. After the user accepted it
// waits, within the call, until the callback completed on this replica or the authorization lapses: the request is
// then sent again with the new grant, in the same call.
func (c *connector) onAuthorization(ctx context.Context, r mcpauth.AuthorizationRequest) error {
	id := rand.Text()
	l := link{Subject: r.Subject, AuthURL: r.AuthorizationURL, ID: id, Expires: r.Expires.Unix()}
	if u, ok := resource.UserFrom(ctx); ok {
		l.Issuer = u.Issuer
	}
	if cs := server.ClientSessionFromContext(ctx); cs != nil {
		l.Session = cs.SessionID()
	}
	sealed, err := c.sealJSON(l, linkAAD)
	if err != nil {
		return fmt.Errorf("sealing the connect link: %w", err)
	}
	done := make(chan struct{})
	c.mu.Lock()
	c.waiting[id] = done
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.waiting, id)
		c.mu.Unlock()
	}()
	action, err := mcpserve.ElicitURL(ctx, mcpserve.URLElicitation{ID: id,
		URL: c.public + "/oauth/connect?l=" + sealed,
		Message: fmt.Sprintf("The MCP server %s (%s) needs your authorization before this call can go on.", r.Server,
			hostOf(r.URL))})
	switch {
	case errors.Is(err, mcpserve.ErrElicitationDeferred):
		return nil // the call's answer is -32042 with the link
	case err != nil:
		fmt.Fprintf(c.stderr, "tool serve-mcp: the MCP server %s needs the user's authorization, and their client "+
			"could not be asked: %v\n", r.Server, err)
		return nil
	case action == "decline":
		return mcpauth.ErrAccessDenied
	case action == "cancel":
		return nil
	}
	wait := time.NewTimer(r.Expires.Sub(c.now()))
	defer wait.Stop()
	select {
	case <-done:
	case <-ctx.Done():
	case <-wait.C:
	}
	return nil
}

// hostOf is the host of a server's URL, for the user to know which server asks.
func hostOf(u string) string {
	if p, err := url.Parse(u); err == nil && p.Host != "" {
		return p.Host
	}
	return "?"
}

// noStore keeps a response out of caches and its URL out of the next page's Referer.
func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
}

// page answers a browser with a short HTML page.
func page(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html><title>tool serve-mcp</title><p>%s</p>\n", html.EscapeString(msg))
}

// connect binds this browser to the authorization its link names (the cookie), then sends it to the
// authorization server.
func (c *connector) connect(w http.ResponseWriter, r *http.Request) {
	noStore(w)
	var l link
	if !c.openJSON(r.URL.Query().Get("l"), linkAAD, &l) {
		page(w, http.StatusBadRequest, "This authorization link is not valid.")
		return
	}
	if time.Unix(l.Expires, 0).Sub(c.now()) <= 0 {
		page(w, http.StatusGone, "This authorization link has expired: call the tool again for a new one.")
		return
	}
	if c.login != nil {
		c.signIn(w, r, l)
		return
	}
	c.bind(w, r, l)
}

// bind binds this browser to the authorization of l (the cookie), then sends it to the authorization server.
func (c *connector) bind(w http.ResponseWriter, r *http.Request, l link) {
	left := time.Unix(l.Expires, 0).Sub(c.now())
	au, err := url.Parse(l.AuthURL)
	if left <= 0 || err != nil || au.Query().Get("state") == "" {
		page(w, http.StatusGone, "This authorization link has expired: call the tool again for a new one.")
		return
	}
	d := stateDigest(au.Query().Get("state"))
	cookie, err := c.sealJSON(binding{State: d, Subject: l.Subject, Session: l.Session, ID: l.ID, Expires: l.Expires}, bindingAAD)
	if err != nil {
		page(w, http.StatusInternalServerError, "The authorization could not be started.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: c.cookieName(d), Value: cookie, Path: c.path, MaxAge: int(left.Seconds()) + 1,
		Secure: c.secure, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, l.AuthURL, http.StatusFound)
}

// callback completes the authorization of the state it carries, for the browser that holds that state's cookie
// only, and for the cookie's end user.
func (c *connector) callback(w http.ResponseWriter, r *http.Request) {
	noStore(w)
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		page(w, http.StatusBadRequest, "This is not an authorization callback.")
		return
	}
	d := stateDigest(state)
	ck, err := r.Cookie(c.cookieName(d))
	var b binding
	if err != nil || !c.openJSON(ck.Value, bindingAAD, &b) || b.State != d || c.now().Unix() >= b.Expires {
		page(w, http.StatusForbidden, "This browser did not start this authorization: open the link your MCP "+
			"client showed you, in this browser.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: ck.Name, Value: "", Path: c.path, MaxAge: -1, Secure: c.secure,
		HttpOnly: true, SameSite: http.SameSiteLaxMode})
	done, err := c.client.CompleteAuthorization(r.Context(), q, b.Subject)
	switch {
	case errors.Is(err, mcpauth.ErrAccessDenied):
		page(w, http.StatusForbidden, "Access was not granted.")
		return
	case errors.Is(err, mcpauth.ErrSubjectMismatch):
		page(w, http.StatusForbidden, "This authorization belongs to another user.")
		return
	case errors.Is(err, mcpauth.ErrUnknownState):
		page(w, http.StatusBadRequest, "This authorization is unknown, was completed already, or has expired.")
		return
	case err != nil:
		fmt.Fprintf(c.stderr, "tool serve-mcp: completing an authorization of server %s: %v\n", done.Server, err)
		page(w, http.StatusBadGateway, "The authorization could not be completed.")
		return
	}
	c.mu.Lock()
	if ch := c.waiting[b.ID]; ch != nil {
		close(ch)
		delete(c.waiting, b.ID)
	}
	c.mu.Unlock()
	if c.notify != nil && b.Session != "" {
		c.notify(b.Session, b.ID) // the client may retry the call it was answered -32042 for
	}
	page(w, http.StatusOK, fmt.Sprintf("The MCP server %s is authorized: you may close this page and return to "+
		"your conversation.", done.Server))
}

// oauthContext carries the guarded client to x/oauth2, for the sign-in's token request.
func (c *connector) oauthContext(r *http.Request) context.Context {
	return context.WithValue(r.Context(), oauth2.HTTPClient, c.login.http)
}

// logf writes a diagnostic that holds no secret to stderr.
func (c *connector) logf(format string, args ...any) {
	fmt.Fprintf(c.stderr, "tool serve-mcp: "+format+"\n", args...)
}
