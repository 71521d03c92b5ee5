package mcpauth

import (
	"context"
	"crypto"
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
	// RefreshBefore is how long before its expiry a token is refreshed, at most half its lifetime (a token that
	// lives 30s is refreshed after 15s, not on every request); DefaultRefreshBefore when 0.
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
	issued  time.Time // when the token was issued, for its lifetime; zero: unknown
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
	if e.refresh && !e.expiry.IsZero() && now.Add(c.refreshLead(e)).After(e.expiry) && !now.Before(e.retry) {
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

// refreshLead is how long before its expiry e's token is refreshed: Config.RefreshBefore, or half the token's
// lifetime when that is shorter, so that a server's short-lived tokens are not refreshed on every request.
func (c *Client) refreshLead(e *cached) time.Duration {
	lead := c.cfg.RefreshBefore
	if !e.issued.IsZero() {
		if half := e.expiry.Sub(e.issued) / 2; half < lead {
			lead = max(half, 0)
		}
	}
	return lead
}

// load reads the grant at key into the cache; a grant that is absent or unreadable here is cached as none.
func (c *Client) load(ctx context.Context, k cacheKey, key string) *cached {
	e := &cached{key: key}
	var g grantRecord
	if raw, err := c.rec.get(ctx, key, &g); err == nil {
		var sec grantSecrets
		if c.rec.vault.open(key, g.Sealed, &sec) == nil {
			e = &cached{access: sec.Access, expiry: g.Expiry, issued: g.issued(), refresh: g.Refresh && sec.Refresh != "", raw: raw, key: key}
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
	if raw != nil && (seen == nil || string(seen.raw) != string(raw)) && c.answers(&g, ch) {
		if e := c.load(ctx, k, key); e.access != "" && (e.expiry.IsZero() || c.now().Before(e.expiry)) {
			authorized(ctx, s, &g, "stored") // written by another replica (or before a restart): try it
			return nil
		}
	}
	if raw != nil && ch.Status == http.StatusForbidden && seen != nil && string(seen.raw) == string(raw) && c.answers(&g, ch) {
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

// answers reports whether g answers ch: a 401 wants any other token, a 403 one with the scopes it names.
func (c *Client) answers(g *grantRecord, ch Challenge) bool {
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

var _ Authorizer = (*Client)(nil)
