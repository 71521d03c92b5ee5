package main

import (
	"crypto/rand"
	"errors"
	"net/http"
	"time"

	"github.com/commonagents-go/tool/mcpserve/resource"
	"golang.org/x/oauth2"
)

// A connect link proves nothing of who opened it: a user may hand theirs to someone else, who would then bind
// their own upstream account to the link's user (MCP 2025-11-25, elicitation, "Phishing"). So the connect route
// first signs the browser in at the door's authorization server, with the gateway's own client (the code flow with
// PKCE, the resource being the door's): the access token it gets must pass the door's own checks and name the
// link's user (resource.User.Key); only then is the browser bound to the upstream authorization and sent on.

// login is the gateway's client at the door's authorization servers.
type login struct {
	door             *resource.Server
	resource         string // the door's resource: the audience the sign-in's token must have
	scopes           []string
	clientID, secret string
	http             *http.Client // guarded: the door's issuers' endpoints
}

// signing is the content of the sign-in cookie, sealed: the link it is for, the state and the PKCE verifier.
type signing struct {
	Link     link   `json:"l"`
	State    string `json:"h"` // stateDigest of the sign-in's state
	Verifier string `json:"v"`
	Token    string `json:"t"` // the issuer's token endpoint
	Expires  int64  `json:"e"`
}

const signingAAD = "tool serve-mcp sign-in cookie v1"

// signInBound bounds a sign-in at the door's authorization server.
const signInBound = 10 * time.Minute

func (c *connector) signingCookie(d string) string {
	if c.secure {
		return "__Secure-tool-login-" + d[:12]
	}
	return "tool-login-" + d[:12]
}

func (g *login) config(authURL, tokenURL, redirect string) *oauth2.Config {
	style := oauth2.AuthStyleInParams
	if g.secret != "" {
		style = oauth2.AuthStyleInHeader
	}
	return &oauth2.Config{ClientID: g.clientID, ClientSecret: g.secret, RedirectURL: redirect, Scopes: g.scopes,
		Endpoint: oauth2.Endpoint{AuthURL: authURL, TokenURL: tokenURL, AuthStyle: style}}
}

// signIn sends the browser that opened l to the door's authorization server, to learn who it is.
func (c *connector) signIn(w http.ResponseWriter, r *http.Request, l link) {
	issuer := l.Issuer
	if issuer == "" {
		issuer = c.login.door.Issuers()[0]
	}
	meta, err := c.login.door.AuthServerMetadata(r.Context(), issuer)
	if err != nil || meta.AuthorizationEndpoint == "" || meta.TokenEndpoint == "" {
		page(w, http.StatusBadGateway, "The sign-in could not be started.")
		return
	}
	state, verifier := rand.Text()+rand.Text(), oauth2.GenerateVerifier()
	d := stateDigest(state)
	expires := min(c.now().Add(signInBound).Unix(), l.Expires)
	cookie, err := c.sealJSON(signing{Link: l, State: d, Verifier: verifier, Token: meta.TokenEndpoint, Expires: expires},
		signingAAD)
	if err != nil {
		page(w, http.StatusInternalServerError, "The sign-in could not be started.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: c.signingCookie(d), Value: cookie, Path: c.path,
		MaxAge: int(expires-c.now().Unix()) + 1, Secure: c.secure, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	cfg := c.login.config(meta.AuthorizationEndpoint, meta.TokenEndpoint, c.public+"/oauth/login")
	http.Redirect(w, r, cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("resource", c.login.resource)), http.StatusFound)
}

// loggedIn is the door's authorization server's answer: the browser's user must be the link's, and is then bound
// to the upstream authorization.
func (c *connector) loggedIn(w http.ResponseWriter, r *http.Request) {
	noStore(w)
	if c.login == nil {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		page(w, http.StatusBadRequest, "This is not a sign-in callback.")
		return
	}
	d := stateDigest(state)
	ck, err := r.Cookie(c.signingCookie(d))
	var s signing
	if err != nil || !c.openJSON(ck.Value, signingAAD, &s) || s.State != d || c.now().Unix() >= s.Expires {
		page(w, http.StatusForbidden, "This browser did not start this sign-in: open the link your MCP client "+
			"showed you, in this browser.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: ck.Name, Value: "", Path: c.path, MaxAge: -1, Secure: c.secure,
		HttpOnly: true, SameSite: http.SameSiteLaxMode})
	if q.Get("error") != "" || q.Get("code") == "" {
		page(w, http.StatusForbidden, "The sign-in was not completed.")
		return
	}
	cfg := c.login.config("", s.Token, c.public+"/oauth/login")
	tok, err := cfg.Exchange(c.oauthContext(r), q.Get("code"), oauth2.VerifierOption(s.Verifier),
		oauth2.SetAuthURLParam("resource", c.login.resource))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) { // its message quotes the token endpoint's body: only the code goes out
			c.logf("signing a browser in: the token endpoint answered %q", re.ErrorCode)
		}
		page(w, http.StatusBadGateway, "The sign-in could not be completed.")
		return
	}
	u, err := c.login.door.Verify(r.Context(), tok.AccessToken)
	if err != nil {
		page(w, http.StatusForbidden, "The sign-in did not give a token for this gateway.")
		return
	}
	if u.Key() != s.Link.Subject {
		page(w, http.StatusForbidden, "You are signed in as someone else than the user whose conversation asked "+
			"for this authorization: nothing was authorized.")
		return
	}
	c.bind(w, r, s.Link)
}
