package mcpauth

import (
	"context"
	"crypto"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/store"
	"golang.org/x/oauth2"
)

// Defaults of Config.
const (
	DefaultPendingTTL       = 10 * time.Minute
	DefaultDiscoveryTTL     = time.Hour
	DefaultRefreshBefore    = time.Minute
	DefaultMaxRegistrations = 3
	DefaultKeyPrefix        = "mcpauth/"
	defaultMaxCached        = 10000
)

// Config configures a Client. RedirectURL is required; the rest have defaults.
type Config struct {
	// RedirectURL is the host's callback, registered with authorization servers: the user's browser comes back
	// there with code and state, and the host's handler calls Client.CompleteAuthorization.
	RedirectURL string

	// Client identity, tried in the order MCP gives. ClientMetadataURL is an https URL, with a path, where the
	// host serves its client ID metadata document (SEP-991): used as the client_id with authorization servers
	// that advertise client_id_metadata_document_supported.
	ClientMetadataURL string
	// Registered returns a client the host registered beforehand with the authorization server issuer, for
	// resource. The Client uses it only when the returned RegisteredClient names that same issuer and resource
	// (one of its Resources is the resource or a path prefix of it): a pre-registered client's secret is never
	// sent to another authorization server. nil: none.
	Registered func(issuer, resource string) (RegisteredClient, bool)
	// Register allows dynamic client registration (RFC 7591) with authorization servers that offer it; a
	// registration is stored and reused. At most MaxRegistrations registrations per issuer and hour, per Client.
	Register         bool
	ClientName       string
	MaxRegistrations int

	// Store keeps grants, pending authorizations, registrations and the discovery cache: the host's Store
	// (store/postgres) lets every replica complete an authorization and use a grant. nil: memory, this replica
	// only. It should be a store.SwapStore: a rotating refresh token is spent once across replicas through
	// compare-and-swap; a store.ClaimStore or SwapStore makes a completion single use across replicas.
	Store store.Store
	// Sealer encrypts the records' secret fields (tokens, refresh tokens, client secrets, PKCE verifiers) with
	// the record's key as associated data (NewAESGCM). Without one, secrets are kept in this process's memory
	// only and never written: an authorization then completes only on the replica that started it, and grants
	// are lost with the process.
	Sealer Sealer
	// KeyPrefix is put before every key the Client writes; DefaultKeyPrefix when "".
	KeyPrefix string

	// OnAuthorization hands an authorization URL to the host, which shows it to the end user its own way (its
	// UI, a message, never the LLM). It is called once per pending authorization, within the refused call (ctx
	// is the call's). When it returns nil, the call ends with a recoverable authorization_required result, unless
	// the authorization was completed meanwhile (a host may wait for its user within the call's deadline, or
	// complete at once): then the request is sent again with the new token. An error ends the call too. nil: no
	// user step; Challenge returns ErrAuthorizationRequired.
	OnAuthorization func(ctx context.Context, r AuthorizationRequest) error

	// HTTPClient sends every request to metadata, registration and token endpoints: URLs a remote server names.
	// nil: Guard{}.Client(), which refuses private, loopback and link-local addresses and plain http.
	HTTPClient *http.Client

	// CrossApp enables SEP-990 cross-app access for end users, where the authorization server takes the
	// JWT-bearer grant. nil: none.
	CrossApp *CrossApp

	// RefreshTokens asks for offline_access when the authorization server lists it (SEP-2207), and keeps refresh
	// tokens (refresh_token is in a registration's grant types either way).
	RefreshTokens bool
	// PendingTTL bounds the time a user has to complete an authorization; DefaultPendingTTL when 0.
	PendingTTL time.Duration
	// DiscoveryTTL bounds the life of discovered metadata in the cache; DefaultDiscoveryTTL when 0.
	DiscoveryTTL time.Duration
	// RefreshBefore is how long before its expiry a token is refreshed; DefaultRefreshBefore when 0.
	RefreshBefore time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// RegisteredClient is a client the host registered with an authorization server beforehand.
type RegisteredClient struct {
	// Issuer is the authorization server the client is registered with: it is presented to no other.
	Issuer string
	// Resources are the servers (URLs, or path prefixes of them) it may be used for.
	Resources []string
	ClientID  string
	Secret    string
	// AuthMethod is the token endpoint's client authentication: client_secret_basic, client_secret_post or
	// none; "" picks from the server's metadata. A client with a Key uses private_key_jwt.
	AuthMethod string
	// Key signs private_key_jwt client assertions (RFC 7523): ES256 for an ECDSA P-256 key, RS256 for an RSA
	// key. It may be a KMS or HSM handle: only Sign is called. KeyID is its kid, "" for none.
	Key   crypto.Signer
	KeyID string
	// ClientCredentials lets the client take tokens for the host itself with the client_credentials grant,
	// shared by every task: for tasks without an end user, and for servers whose authorization server offers
	// no authorization_code grant.
	ClientCredentials bool
}

// AuthorizationRequest is a pending authorization, handed to the host by Config.OnAuthorization.
type AuthorizationRequest struct {
	TaskID, CallID string
	// Subject is the end user who must authorize (mcpauth.Server.Subject): the host shows the URL to that user
	// only.
	Subject string
	// Server is the server's block in the manifest, URL its URL; Resource the RFC 8707 resource asked for,
	// Issuer the authorization server.
	Server, URL, Resource, Issuer string
	Scopes                        []string
	// StepUp is set when the server asked for more scopes than the user's grant holds.
	StepUp bool
	// AuthorizationURL is where the user goes. It holds state and the PKCE challenge: not for logs, never for
	// the LLM.
	AuthorizationURL string
	// Expires is when the pending authorization lapses.
	Expires time.Time
}

// Completion says what CompleteAuthorization authorized.
type Completion struct {
	Subject, TaskID, CallID, Server, URL, Resource, Issuer string
	Scopes                                                 []string
	// Expiry is the access token's, zero when the server gave none.
	Expiry time.Time
}

// Grant is an end user's grant for a server, as Grants lists it: no token.
type Grant struct {
	Server, URL, Resource, Issuer string
	Scopes                        []string
	Expiry, Granted               time.Time
	Refreshable                   bool
}

// Errors of CompleteAuthorization.
var (
	// ErrUnknownState: the callback's state names no pending authorization: never issued, expired, already
	// completed, or issued by a Client with another Store or KeyPrefix.
	ErrUnknownState = errors.New("mcpauth: no pending authorization for this state")
	// ErrSubjectMismatch: the pending authorization is another end user's than the callback's session.
	ErrSubjectMismatch = errors.New("mcpauth: the authorization belongs to another end user")
	// ErrIssuerMismatch: the callback's iss is not the authorization server's (RFC 9207: a mix-up).
	ErrIssuerMismatch = errors.New("mcpauth: the callback's issuer is not the authorization server's")
)

// Client is the library's own Authorizer: the MCP authorization flow (2025-11-25) for hosts that serve many end
// users, durable in the host's Store and non-blocking (the user's step goes to the host, and the callback
// completes it on any replica). Grants are kept per end user (Server.Subject) and server URL, and reused by the
// user's later tasks. It is safe for concurrent use.
//
// A request's bearer comes from memory: Token reads the Store once per end user and server, then only when a
// server refuses a token (Challenge), so that a grant completed, refreshed or revoked on another replica is seen
// at the next refusal.
type Client struct {
	cfg  Config
	http *http.Client
	rec  records
	now  func() time.Time

	mu    sync.RWMutex
	cache map[cacheKey]*cached

	discMu sync.Mutex
	disc   map[string]*discovery

	regMu sync.Mutex
	regs  map[string][]time.Time // issuer → registration times within the hour
}

type cacheKey struct{ subject, url string }

// cached is a grant as Token serves it: from memory.
type cached struct {
	access  string
	expiry  time.Time
	refresh bool
	raw     []byte // the record as read, for compare-and-swap; nil: no grant
	key     string
	// retry is when Token may try a refresh again after one failed (the token endpoint down, say): not on
	// every request.
	retry time.Time
}

// refreshRetry spaces the refreshes Token tries while a token is still valid.
const refreshRetry = 10 * time.Second

// New returns a Client for cfg.
func New(cfg Config) (*Client, error) {
	if u, err := url.Parse(cfg.RedirectURL); err != nil || !u.IsAbs() || u.Host == "" {
		return nil, errors.New("mcpauth: Config.RedirectURL must be an absolute url")
	}
	if cfg.ClientMetadataURL != "" {
		u, err := url.Parse(cfg.ClientMetadataURL)
		if err != nil || u.Scheme != "https" || strings.Trim(u.Path, "/") == "" {
			return nil, errors.New("mcpauth: Config.ClientMetadataURL must be an https url with a path")
		}
	}
	c := &Client{cfg: cfg, http: cfg.HTTPClient, now: cfg.Now, cache: map[cacheKey]*cached{},
		disc: map[string]*discovery{}, regs: map[string][]time.Time{}}
	if c.http == nil {
		c.http = Guard{}.Client()
	}
	if c.now == nil {
		c.now = time.Now
	}
	st := cfg.Store
	if st == nil {
		st = store.NewMemory()
	}
	prefix := cfg.KeyPrefix
	if prefix == "" {
		prefix = DefaultKeyPrefix
	}
	c.rec = records{st: st, prefix: prefix, vault: &vault{sealer: cfg.Sealer, mem: map[string]memSecret{}, max: defaultMaxCached}}
	if c.cfg.PendingTTL <= 0 {
		c.cfg.PendingTTL = DefaultPendingTTL
	}
	if c.cfg.DiscoveryTTL <= 0 {
		c.cfg.DiscoveryTTL = DefaultDiscoveryTTL
	}
	if c.cfg.RefreshBefore <= 0 {
		c.cfg.RefreshBefore = DefaultRefreshBefore
	}
	if c.cfg.MaxRegistrations <= 0 {
		c.cfg.MaxRegistrations = DefaultMaxRegistrations
	}
	return c, nil
}

func (c *Client) grantKey(subject string, su *url.URL) string {
	return c.rec.prefix + grantDir + h("subject", subject) + "/" + h("url", su.String())
}

// Token returns the end user's access token for s from memory ("" when there is none: the server's challenge
// starts the flow), refreshing it first when it expires within Config.RefreshBefore. The first request for a
// user and server reads the Store once.
func (c *Client) Token(ctx context.Context, s Server) (string, error) {
	k := cacheKey{s.Subject, s.URL}
	c.mu.RLock()
	e := c.cache[k]
	c.mu.RUnlock()
	if e == nil {
		su, err := canonicalURL(s.URL)
		if err != nil {
			return "", fmt.Errorf("mcpauth: the server's url: %w", err)
		}
		subject := s.Subject
		if subject == "" {
			subject = hostSubject // a task without an end user uses the host's grant (client credentials)
		}
		e = c.load(ctx, k, c.grantKey(subject, su))
	}
	if e.access == "" {
		return "", nil
	}
	now := c.now()
	if e.refresh && !e.expiry.IsZero() && now.Add(c.cfg.RefreshBefore).After(e.expiry) && !now.Before(e.retry) {
		if fresh, err := c.refresh(ctx, s, e.key, e.raw); err == nil {
			e = fresh
		} else {
			later := *e
			later.retry = now.Add(refreshRetry)
			c.mu.Lock()
			if cur := c.cache[k]; cur == e {
				c.cache[k] = &later
			} else if cur != nil { // replaced meanwhile: a grant refused for good is cached as none
				e = cur
			}
			c.mu.Unlock()
			if e.access == "" {
				return "", nil
			}
		}
	}
	if !e.expiry.IsZero() && !now.Before(e.expiry) {
		return "", nil
	}
	ReporterFrom(ctx).secret(e.access)
	return e.access, nil
}

// load reads the grant at key into the cache; a grant that is absent or unreadable here is cached as none.
func (c *Client) load(ctx context.Context, k cacheKey, key string) *cached {
	e := &cached{key: key}
	var g grantRecord
	if raw, err := c.rec.get(ctx, key, &g); err == nil {
		var sec grantSecrets
		if c.rec.vault.open(key, g.Sealed, &sec) == nil {
			e = &cached{access: sec.Access, expiry: g.Expiry, refresh: g.Refresh && sec.Refresh != "", raw: raw, key: key}
		}
	}
	c.put(k, e)
	return e
}

func (c *Client) put(k cacheKey, e *cached) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.cache) >= defaultMaxCached {
		for old := range c.cache { // map order: a random victim, which costs its owner one Store read
			delete(c.cache, old)
			break
		}
	}
	c.cache[k] = e
}

// Challenge answers a server's refusal: a grant another replica wrote meanwhile, else a refresh (on a 401), else
// discovery and the user's step, handed to the host through Config.OnAuthorization.
func (c *Client) Challenge(ctx context.Context, s Server, ch Challenge) error {
	su, err := canonicalURL(s.URL)
	if err != nil {
		return fmt.Errorf("mcpauth: the server's url: %w", err)
	}
	if s.Subject == "" {
		return c.hostChallenge(ctx, s, su, ch)
	}
	k, key := cacheKey{s.Subject, s.URL}, c.grantKey(s.Subject, su)
	c.mu.RLock()
	seen := c.cache[k]
	c.mu.RUnlock()
	var g grantRecord
	raw, err := c.rec.get(ctx, key, &g)
	switch {
	case errors.Is(err, store.ErrNotFound):
		raw = nil
	case err != nil:
		return fmt.Errorf("mcpauth: reading the grant: %w", err)
	}
	if raw != nil && (seen == nil || string(seen.raw) != string(raw)) && c.covers(&g, ch) {
		if e := c.load(ctx, k, key); e.access != "" && (e.expiry.IsZero() || c.now().Before(e.expiry)) {
			authorized(ctx, s, &g, "stored") // written by another replica (or before a restart): try it
			return nil
		}
	}
	if raw != nil && ch.Status == http.StatusForbidden && seen != nil && string(seen.raw) == string(raw) && c.covers(&g, ch) {
		// The server refuses for scopes the refused grant holds already: asking the user again would give the
		// same grant, in a loop across calls (the per-call bound, MaxAuthorizations, ends one call only).
		return fmt.Errorf("%w: server %s refuses scopes the grant holds", ErrAccessDenied, s.Name)
	}
	if raw != nil && ch.Status == http.StatusUnauthorized && g.Refresh {
		if _, err := c.refresh(ctx, s, key, raw); err == nil {
			return nil
		}
	}
	d, err := c.discovery(ctx, s, su, ch)
	if err != nil {
		return err
	}
	var current []string
	if raw != nil {
		current = g.Scopes
	}
	if done, err := c.machine(ctx, s, su, d, ch, current); done {
		return err
	}
	return c.userStep(ctx, s, su, d, ch, current)
}

// hostChallenge answers the challenge of a task without an end user: client credentials, or nothing.
func (c *Client) hostChallenge(ctx context.Context, s Server, su *url.URL, ch Challenge) error {
	d, err := c.discovery(ctx, s, su, ch)
	if err != nil {
		return err
	}
	if done, err := c.machine(ctx, s, su, d, ch, nil); done {
		return err
	}
	return fmt.Errorf("%w: the task has no end user (TaskConfig.Subject), and no client credentials apply",
		ErrAuthorizationRequired)
}

// authorized reports the fact of a grant the task's request is about to use.
func authorized(ctx context.Context, s Server, g *grantRecord, outcome string) {
	ReporterFrom(ctx).fact(facts.MCPAuthorized, map[string]any{"server": s.Name, "resource": g.Resource,
		"issuer": g.Issuer, "scopes": g.Scopes, "expires_at": g.Expiry, "subject": SubjectDigest(s.Subject),
		"outcome": outcome})
}

// covers reports whether g answers ch: a 401 wants any other token, a 403 one with the scopes it names.
func (c *Client) covers(g *grantRecord, ch Challenge) bool {
	if ch.Status != http.StatusForbidden {
		return true
	}
	for _, sc := range ch.Scopes {
		if !slices.Contains(g.Scopes, sc) {
			return false
		}
	}
	return true
}

// reason is the fact's word for a refusal.
func reason(err error) string {
	if errors.Is(err, ErrRefused) {
		return "outbound_guard"
	}
	return "metadata"
}

// discovery returns the server's discovery from the cache (memory, then the Store), else discovers it.
func (c *Client) discovery(ctx context.Context, s Server, su *url.URL, ch Challenge) (*discovery, error) {
	key := c.rec.prefix + discoveryDir + h("url", su.String())
	now := c.now()
	c.discMu.Lock()
	d := c.disc[key]
	c.discMu.Unlock()
	if d != nil && now.Sub(d.Fetched) < c.cfg.DiscoveryTTL {
		return d, nil
	}
	var stored discovery
	if _, err := c.rec.get(ctx, key, &stored); err == nil && now.Sub(stored.Fetched) < c.cfg.DiscoveryTTL &&
		stored.URL == su.String() {
		d = &stored
	} else {
		fresh, err := c.discover(ctx, su, ch)
		if err != nil {
			err = fmt.Errorf("mcpauth: discovery for server %s: %w", s.Name, err)
			if errors.Is(err, ErrRefusedMetadata) || errors.Is(err, ErrRefused) {
				ReporterFrom(ctx).fact(facts.MCPAuthorizationRefused, map[string]any{"server": s.Name,
					"url": su.String(), "subject": SubjectDigest(s.Subject), "reason": reason(err), "error": err.Error()})
			}
			return nil, err
		}
		d = fresh
		if raw, err := json.Marshal(d); err == nil {
			_ = c.rec.putTTL(ctx, key, raw, c.cfg.DiscoveryTTL) // a cache: a failed write costs a discovery later
		}
	}
	c.discMu.Lock()
	defer c.discMu.Unlock()
	if len(c.disc) >= 1024 {
		for k := range c.disc {
			delete(c.disc, k)
			break
		}
	}
	c.disc[key] = d
	return d, nil
}

// forgetDiscovery drops a server's discovery after a failed use: the next challenge discovers again.
func (c *Client) forgetDiscovery(ctx context.Context, su string) {
	key := c.rec.prefix + discoveryDir + h("url", su)
	c.discMu.Lock()
	delete(c.disc, key)
	c.discMu.Unlock()
	_ = c.rec.st.Delete(ctx, key)
}

// randomString returns n random bytes in base64url: state values.
func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// scopesFor applies the MCP rule: the challenge's scope, else the resource metadata's scopes_supported, else
// none; with the user's current scopes on a step-up; offline_access when refresh tokens are wanted and the
// authorization server lists it.
func (c *Client) scopesFor(d *discovery, ch Challenge, current []string) []string {
	scopes := slices.Clone(ch.Scopes)
	if len(scopes) == 0 {
		scopes = slices.Clone(d.Scopes)
	}
	if ch.Status == http.StatusForbidden {
		scopes = append(scopes, current...)
	}
	if c.cfg.RefreshTokens && slices.Contains(d.AS.ScopesSupported, "offline_access") {
		scopes = append(scopes, "offline_access")
	}
	var out []string
	for _, s := range scopes {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// userStep stores a pending authorization and hands its URL to the host.
func (c *Client) userStep(ctx context.Context, s Server, su *url.URL, d *discovery, ch Challenge, current []string) error {
	rep := ReporterFrom(ctx)
	id, err := c.identity(ctx, d)
	if err != nil {
		return fmt.Errorf("mcpauth: the client identity for server %s: %w", s.Name, err)
	}
	scopes := c.scopesFor(d, ch, current)
	state, verifier := randomString(32), oauth2.GenerateVerifier()
	rep.secret(state, verifier, id.secret)
	now := c.now()
	expires := now.Add(c.cfg.PendingTTL)
	pkey := c.rec.prefix + pendingDir + h("state", state)
	p := pendingRecord{Subject: s.Subject, TaskID: s.TaskID, CallID: s.CallID, Server: s.Name, URL: su.String(),
		Resource: d.Resource, Issuer: d.AS.Issuer, IssParam: d.AS.AuthorizationResponseIssParameterSupported,
		ClientID: id.id, ClientKey: id.key, Token: d.AS.TokenEndpoint, Revoke: d.AS.RevocationEndpoint,
		Method: id.method, Redirect: c.cfg.RedirectURL,
		Scopes: scopes, Refresh: slices.Contains(scopes, "offline_access"), StepUp: ch.Status == http.StatusForbidden,
		Expires: expires}
	if p.Sealed, err = c.rec.vault.seal(pkey, pendingSecrets{Verifier: verifier, Secret: id.secret}, expires); err != nil {
		return fmt.Errorf("mcpauth: sealing the pending authorization: %w", err)
	}
	raw, _ := json.Marshal(p)
	if err := c.rec.putTTL(ctx, pkey, raw, c.cfg.PendingTTL); err != nil {
		return fmt.Errorf("mcpauth: storing the pending authorization: %w", err)
	}
	cfg := oauthConfig(p.ClientID, id.secret, p.Method, d.AS.AuthorizationEndpoint, p.Token, p.Redirect, scopes)
	authURL := cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", d.Resource))
	rep.secret(authURL)
	rep.fact(facts.MCPAuthorizationRequired, map[string]any{"server": s.Name, "resource": d.Resource, "issuer": d.AS.Issuer,
		"scopes": scopes, "step_up": p.StepUp, "subject": SubjectDigest(s.Subject), "expires_at": expires})
	if c.cfg.OnAuthorization == nil {
		return fmt.Errorf("%w: no Config.OnAuthorization to hand the user's step to", ErrAuthorizationRequired)
	}
	if err := c.cfg.OnAuthorization(ctx, AuthorizationRequest{TaskID: s.TaskID, CallID: s.CallID, Subject: s.Subject,
		Server: s.Name, URL: su.String(), Resource: d.Resource, Issuer: d.AS.Issuer, Scopes: scopes, StepUp: p.StepUp,
		AuthorizationURL: authURL, Expires: expires}); err != nil {
		return fmt.Errorf("mcpauth: the host's OnAuthorization: %w", err)
	}
	// The host may have completed it already, here or on another replica.
	key := c.grantKey(s.Subject, su)
	var g grantRecord
	if _, err := c.rec.get(ctx, key, &g); err == nil && g.From == pkey {
		if e := c.load(ctx, cacheKey{s.Subject, s.URL}, key); e.access != "" {
			authorized(ctx, s, &g, "completed")
			return nil
		}
	}
	return ErrAuthorizationRequired
}

// oauthConfig is x/oauth2's configuration for a client at a token endpoint.
func oauthConfig(id, secret, method, authURL, tokenURL, redirect string, scopes []string) *oauth2.Config {
	style := oauth2.AuthStyleInHeader
	if method == "client_secret_post" || method == "none" {
		style = oauth2.AuthStyleInParams
	}
	if method == "none" {
		secret = ""
	}
	return &oauth2.Config{ClientID: id, ClientSecret: secret, RedirectURL: redirect, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: authURL, TokenURL: tokenURL, AuthStyle: style}}
}

// CompleteAuthorization finishes a pending authorization from the query of the host's callback request (code,
// state, iss, or error), on any replica whose Client shares the Store (and the Sealer's keys). subject is the
// end user of the callback's session, as the host knows it: a pending authorization of another user is refused
// (ErrSubjectMismatch), and stays pending. The state is taken once across replicas: a replay, an unknown or an
// expired state is ErrUnknownState. The callback's iss must be the authorization server's when it advertises
// RFC 9207 (ErrIssuerMismatch). The code is exchanged with the stored PKCE verifier, resource and client
// authentication, and the grant stored for the user and server. A user who refused is ErrAccessDenied. Errors
// carry no code, token, verifier or state. ctx bounds the call.
func (c *Client) CompleteAuthorization(ctx context.Context, callback url.Values, subject string) (Completion, error) {
	state := callback.Get("state")
	if state == "" {
		return Completion{}, ErrUnknownState
	}
	rep := ReporterFrom(ctx)
	rep.secret(state, callback.Get("code"))
	pkey := c.rec.prefix + pendingDir + h("state", state)
	var p pendingRecord
	if _, err := c.rec.get(ctx, pkey, &p); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return Completion{}, ErrUnknownState
		}
		return Completion{}, fmt.Errorf("mcpauth: reading the pending authorization: %w", err)
	}
	if !c.now().Before(p.Expires) {
		return Completion{}, ErrUnknownState
	}
	if p.Subject != subject {
		return Completion{}, ErrSubjectMismatch
	}
	done := Completion{Subject: p.Subject, TaskID: p.TaskID, CallID: p.CallID, Server: p.Server, URL: p.URL,
		Resource: p.Resource, Issuer: p.Issuer}
	won, err := c.rec.claimOnce(ctx, c.rec.prefix+spentDir+h("state", state), c.cfg.PendingTTL)
	if err != nil {
		return done, fmt.Errorf("mcpauth: claiming the pending authorization: %w", err)
	}
	if !won {
		return done, ErrUnknownState
	}
	_ = c.rec.st.Delete(ctx, pkey) // claimed: a leftover record can no longer be completed
	var sec pendingSecrets
	err = c.rec.vault.open(pkey, p.Sealed, &sec)
	c.rec.vault.forget(pkey)
	if err != nil {
		return done, fmt.Errorf("mcpauth: the pending authorization: %w", err)
	}
	rep.secret(sec.Verifier, sec.Secret)
	if e := callback.Get("error"); e != "" {
		if e == "access_denied" {
			return done, ErrAccessDenied
		}
		return done, fmt.Errorf("mcpauth: the authorization server answered %s", oauthCode(e))
	}
	iss := callback.Get("iss")
	if (p.IssParam || iss != "") && strings.TrimSuffix(iss, "/") != strings.TrimSuffix(p.Issuer, "/") {
		return done, ErrIssuerMismatch
	}
	code := callback.Get("code")
	if code == "" {
		return done, errors.New("mcpauth: the callback carries no code")
	}
	cfg := oauthConfig(p.ClientID, sec.Secret, p.Method, "", p.Token, p.Redirect, p.Scopes)
	tok, err := cfg.Exchange(c.oauthContext(ctx), code, oauth2.VerifierOption(sec.Verifier),
		oauth2.SetAuthURLParam("resource", p.Resource))
	if err != nil {
		c.tokenFailed(ctx, p.ClientKey, err)
		return done, fmt.Errorf("mcpauth: the code exchange: %w", safeOAuth(err))
	}
	rep.secret(tok.AccessToken, tok.RefreshToken)
	g := grantRecord{Subject: p.Subject, URL: p.URL, Resource: p.Resource, Issuer: p.Issuer, ClientID: p.ClientID,
		ClientKey: p.ClientKey, Token: p.Token, Revoke: p.Revoke, Method: p.Method, Scopes: grantedScopes(tok, p.Scopes),
		Expiry: c.expiry(tok), Refresh: tok.RefreshToken != "", Server: p.Server, TaskID: p.TaskID, Granted: c.now(),
		From: pkey}
	su, _ := canonicalURL(p.URL)
	key := c.grantKey(p.Subject, su)
	if err := c.writeGrant(ctx, key, &g, grantSecrets{Access: tok.AccessToken, Refresh: tok.RefreshToken, Secret: sec.Secret}); err != nil {
		return done, err
	}
	done.Scopes, done.Expiry = g.Scopes, g.Expiry
	return done, nil
}

// writeGrant puts g with its secrets at key, replacing what is there.
func (c *Client) writeGrant(ctx context.Context, key string, g *grantRecord, sec grantSecrets) error {
	raw, err := c.sealGrant(key, g, sec)
	if err != nil {
		return err
	}
	if err := c.rec.st.Put(ctx, key, raw); err != nil {
		return fmt.Errorf("mcpauth: storing the grant: %w", err)
	}
	return nil
}

func (c *Client) sealGrant(key string, g *grantRecord, sec grantSecrets) ([]byte, error) {
	g.Nonce = randomString(9)
	var err error
	if g.Sealed, err = c.rec.vault.seal(key, sec, time.Time{}); err != nil {
		return nil, fmt.Errorf("mcpauth: sealing the grant: %w", err)
	}
	return json.Marshal(g)
}

// oauthContext carries the guarded client to x/oauth2.
func (c *Client) oauthContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, c.http)
}

// expiry is when tok expires on the Client's clock (x/oauth2 counts expires_in from time.Now); zero: unknown.
func (c *Client) expiry(tok *oauth2.Token) time.Time {
	if tok.ExpiresIn > 0 {
		return c.now().Add(time.Duration(tok.ExpiresIn) * time.Second)
	}
	return tok.Expiry
}

// grantedScopes are the scopes a token response grants: its scope, else what was asked for (RFC 6749 §5.1).
func grantedScopes(tok *oauth2.Token, asked []string) []string {
	if s, ok := tok.Extra("scope").(string); ok && s != "" {
		return strings.Fields(s)
	}
	return asked
}

// oauthCode bounds an OAuth error code from a remote party to a short token of its own alphabet.
func oauthCode(s string) string {
	if len(s) > 64 {
		s = s[:64]
	}
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}

// safeOAuth reduces an error of x/oauth2 to the OAuth error code or the HTTP status: its message quotes the token
// endpoint's body, which may echo secrets. errInvalidGrant and errInvalidClient are kept for decisions.
func safeOAuth(err error) error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		if errors.Is(err, ErrRefused) {
			return err
		}
		msg, _, _ := strings.Cut(err.Error(), "\n")
		if len(msg) > 200 {
			msg = msg[:200]
		}
		return errors.New(msg)
	}
	switch re.ErrorCode {
	case "invalid_grant":
		return errInvalidGrant
	case "invalid_client", "unauthorized_client":
		return fmt.Errorf("%w (%s)", errInvalidClient, re.ErrorCode)
	case "access_denied":
		return ErrAccessDenied
	case "":
		if re.Response != nil {
			return fmt.Errorf("the token endpoint answered %s", re.Response.Status)
		}
		return errors.New("the token endpoint failed")
	}
	return fmt.Errorf("the token endpoint answered %s", oauthCode(re.ErrorCode))
}

var (
	errInvalidGrant  = errors.New("the token endpoint answered invalid_grant")
	errInvalidClient = errors.New("the token endpoint refused the client")
)

// tokenFailed drops a dynamic registration the token endpoint no longer knows: the next user step registers anew.
func (c *Client) tokenFailed(ctx context.Context, clientKey string, err error) {
	var re *oauth2.RetrieveError
	if clientKey != "" && errors.As(err, &re) && re.ErrorCode == "invalid_client" {
		_ = c.rec.st.Delete(ctx, clientKey)
		c.rec.vault.forget(clientKey)
	}
}

// Grants lists subject's grants, without their tokens. ctx bounds the call.
func (c *Client) Grants(ctx context.Context, subject string) ([]Grant, error) {
	keys, err := c.rec.st.List(ctx, c.rec.prefix+grantDir+h("subject", subject)+"/")
	if err != nil {
		return nil, fmt.Errorf("mcpauth: listing grants: %w", err)
	}
	var out []Grant
	for _, k := range keys {
		var g grantRecord
		if _, err := c.rec.get(ctx, k, &g); err != nil || g.Subject != subject {
			continue
		}
		out = append(out, Grant{Server: g.Server, URL: g.URL, Resource: g.Resource, Issuer: g.Issuer,
			Scopes: g.Scopes, Expiry: g.Expiry, Granted: g.Granted, Refreshable: g.Refresh})
	}
	return out, nil
}

// Revoke forgets subject's grant for the server at serverURL: its record in the Store, and this replica's copy
// in memory; where the authorization server has a revocation endpoint (RFC 7009), its refresh token (else its
// access token) is revoked there first, and a failure there is returned after the grant is forgotten. Other
// replicas keep sending an access token they hold in memory until the server refuses it. ctx bounds the call.
func (c *Client) Revoke(ctx context.Context, subject, serverURL string) error {
	su, err := canonicalURL(serverURL)
	if err != nil {
		return fmt.Errorf("mcpauth: the server's url: %w", err)
	}
	key := c.grantKey(subject, su)
	var revoked error
	var g grantRecord
	if _, err := c.rec.get(ctx, key, &g); err == nil && g.Revoke != "" {
		var sec grantSecrets
		if c.rec.vault.open(key, g.Sealed, &sec) == nil {
			revoked = c.revoke(ctx, &g, sec)
		}
	}
	if err := c.rec.st.Delete(ctx, key); err != nil {
		return fmt.Errorf("mcpauth: deleting the grant: %w", err)
	}
	c.rec.vault.forget(key)
	c.mu.Lock()
	for k, e := range c.cache {
		if e.key == key {
			delete(c.cache, k)
		}
	}
	c.mu.Unlock()
	return revoked
}

// revoke asks the grant's authorization server to revoke its refresh token, else its access token (RFC 7009
// §2.1), with the client's authentication. x/oauth2 has no revocation request: it is a form POST here.
func (c *Client) revoke(ctx context.Context, g *grantRecord, sec grantSecrets) error {
	ReporterFrom(ctx).secret(sec.Access, sec.Refresh, sec.Secret)
	form := url.Values{"token": {sec.Refresh}, "token_type_hint": {"refresh_token"}}
	if sec.Refresh == "" {
		form = url.Values{"token": {sec.Access}, "token_type_hint": {"access_token"}}
	}
	basic := g.Method != "client_secret_post" && g.Method != "none" && sec.Secret != ""
	if !basic {
		form.Set("client_id", g.ClientID)
		if g.Method == "client_secret_post" {
			form.Set("client_secret", sec.Secret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.Revoke, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("mcpauth: the revocation endpoint: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic {
		req.SetBasicAuth(url.QueryEscape(g.ClientID), url.QueryEscape(sec.Secret)) // RFC 6749 §2.3.1
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("mcpauth: revoking at the authorization server: %w", safeOAuth(err))
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("mcpauth: the revocation endpoint answered %s", resp.Status)
	}
	return nil
}

var _ Authorizer = (*Client)(nil)
