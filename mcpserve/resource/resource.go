// Package resource makes an MCP server an OAuth 2.0 protected resource, as the MCP authorization specification
// (2025-11-25) asks of a server: it publishes RFC 9728 metadata naming its authorization servers, admits only
// requests whose bearer token one of them issued for this resource, and tells every request who sent it.
//
// A JWT access token is checked against its issuer's keys (the jwks_uri of the issuer's RFC 8414 metadata): the
// algorithm is on an allow-list and fits the key, "none", HMAC and symmetric keys are refused, "iss" matches an
// issuer exactly, "aud" names the resource, "exp" is required and "nbf" checked, with a small leeway; "typ", when
// present, is at+jwt (RFC 9068). A token that is not a JWT goes to the RFC 7662 introspection endpoint when one
// is configured. Every URL it fetches goes through the Client it is given, an SSRF-guarded client by default
// (mcpauth.Guard), and key sets are bounded in size and count.
//
// Nothing of a token reaches an error, a response or a log: a refusal says which check failed, never the token.
package resource

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/commonagents-go/tool/mcpauth"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Defaults of Config's bounds.
const (
	DefaultLeeway          = 30 * time.Second
	DefaultMaxKeySetBytes  = 256 << 10
	DefaultMaxKeys         = 64
	DefaultRefetchInterval = time.Minute
	// maxCallBytes bounds the part of a POST body read to find the tool of a tools/call (ToolScopes).
	maxCallBytes = 4 << 20
)

// Config describes the protected resource.
type Config struct {
	// Resource is the canonical URL of the MCP endpoint (https://mcp.example.com/mcp): what the tokens' "aud"
	// must name (RFC 8707), and what the metadata says. It is configuration, never taken from a request's Host.
	Resource string
	// Issuers are the authorization servers whose tokens are accepted, by their issuer identifiers.
	Issuers []string
	// Scopes are required of every request's token.
	Scopes []string
	// ToolScopes are required, beyond Scopes, of the token of a tools/call of the named tool.
	ToolScopes map[string][]string
	// Introspection, when set, checks tokens that are not JWTs (opaque tokens) at an RFC 7662 endpoint.
	Introspection *Introspection
	// Client fetches the issuers' metadata and key sets, and calls the introspection endpoint. nil: a
	// mcpauth.Guard client, which refuses private, loopback and link-local addresses.
	Client *http.Client
	// Now is the clock the token times are checked against; nil: time.Now. A host gives its Tool's Clock.
	Now func() time.Time
	// Leeway is the clock skew allowed on "exp", "nbf" and "iat"; 0: DefaultLeeway.
	Leeway time.Duration
	// MaxKeySetBytes and MaxKeys bound an issuer's key set; 0: DefaultMaxKeySetBytes and DefaultMaxKeys.
	MaxKeySetBytes int64
	MaxKeys        int
	// RefetchInterval is the least time between two fetches of an issuer's key set for an unknown "kid";
	// 0: DefaultRefetchInterval.
	RefetchInterval time.Duration
}

// Introspection is an RFC 7662 endpoint, with the client credentials the resource presents to it
// (client_secret_basic).
type Introspection struct {
	URL, ClientID, ClientSecret string
}

// User is who a token was issued to.
type User struct {
	Issuer, Subject string
	Scopes          []string
	Expiry          time.Time
}

// Key is an opaque key for the user, the same for every token of theirs: a digest of (issuer, subject). A host
// gives it as tool.TaskConfig.Subject, so the upstream grants of one user serve all of that user's sessions.
func (u User) Key() string {
	d := sha256.Sum256([]byte(u.Issuer + "\x00" + u.Subject))
	return hex.EncodeToString(d[:])
}

type userKey struct{}

// UserFrom returns the user a request of Handler's was admitted for.
func UserFrom(ctx context.Context) (User, bool) {
	u, ok := ctx.Value(userKey{}).(User)
	return u, ok
}

// Errors a refusal wraps: the check that failed.
var (
	ErrNoToken           = errors.New("resource: no bearer token")
	ErrInvalidToken      = errors.New("resource: invalid token")
	ErrInsufficientScope = errors.New("resource: insufficient scope")
)

// Server checks the requests of a protected resource. It is safe for concurrent use.
type Server struct {
	cfg      Config
	metadata *oauthex.ProtectedResourceMetadata
	issuers  map[string]*issuer
	verified tokenCache
}

// New checks cfg and returns its Server. It fetches nothing: an issuer's metadata and keys are fetched when a
// token of that issuer first comes.
func New(cfg Config) (*Server, error) {
	u, err := url.Parse(cfg.Resource)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.Fragment != "" {
		return nil, fmt.Errorf("resource: Resource %q is not an absolute http(s) URL without a fragment", cfg.Resource)
	}
	if len(cfg.Issuers) == 0 {
		return nil, errors.New("resource: no Issuers")
	}
	if cfg.Client == nil {
		cfg.Client = mcpauth.Guard{}.Client()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Leeway = cmpOr(cfg.Leeway, DefaultLeeway)
	cfg.MaxKeySetBytes = cmpOr(cfg.MaxKeySetBytes, DefaultMaxKeySetBytes)
	cfg.MaxKeys = cmpOr(cfg.MaxKeys, DefaultMaxKeys)
	cfg.RefetchInterval = cmpOr(cfg.RefetchInterval, DefaultRefetchInterval)
	s := &Server{cfg: cfg, issuers: map[string]*issuer{}}
	for _, iss := range cfg.Issuers {
		if _, err := url.Parse(iss); err != nil || iss == "" {
			return nil, fmt.Errorf("resource: issuer %q is not a URL", iss)
		}
		s.issuers[iss] = &issuer{id: iss, s: s}
	}
	scopes := slices.Clone(cfg.Scopes)
	for _, ts := range cfg.ToolScopes {
		for _, sc := range ts {
			if !slices.Contains(scopes, sc) {
				scopes = append(scopes, sc)
			}
		}
	}
	s.metadata = &oauthex.ProtectedResourceMetadata{Resource: cfg.Resource, AuthorizationServers: cfg.Issuers,
		ScopesSupported: scopes, BearerMethodsSupported: []string{"header"}}
	return s, nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// MetadataPath is where the RFC 9728 metadata is served: /.well-known/oauth-protected-resource followed by the
// resource's path.
func (s *Server) MetadataPath() string {
	u, _ := url.Parse(s.cfg.Resource)
	return "/.well-known/oauth-protected-resource" + strings.TrimSuffix(u.Path, "/")
}

// MetadataURL is the metadata's absolute URL, which 401 responses name.
func (s *Server) MetadataURL() string {
	u, _ := url.Parse(s.cfg.Resource)
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: s.MetadataPath()}).String()
}

// Metadata serves the RFC 9728 metadata, at MetadataPath.
func (s *Server) Metadata() http.Handler { return auth.ProtectedResourceMetadataHandler(s.metadata) }

// Handler admits to next only the requests whose bearer token passes Verify and holds the scopes the request
// needs, with the User in their context (UserFrom). It answers the others 401, or 403 for too few scopes, with a
// WWW-Authenticate challenge naming the metadata URL and the scopes wanted.
func (s *Server) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearerToken(r)
		if !ok {
			s.refuse(w, ErrNoToken, s.cfg.Scopes)
			return
		}
		u, err := s.Verify(r.Context(), token)
		if err != nil {
			s.refuse(w, err, s.cfg.Scopes)
			return
		}
		want := s.cfg.Scopes
		if len(s.cfg.ToolScopes) > 0 && r.Method == http.MethodPost {
			tools, body, err := toolsOfCalls(r.Body)
			if err != nil {
				http.Error(w, "the request body cannot be read", http.StatusBadRequest)
				return
			}
			r.Body = body
			want = slices.Clone(want)
			for _, name := range tools {
				want = append(want, s.cfg.ToolScopes[name]...)
			}
		}
		if missing := slices.ContainsFunc(want, func(sc string) bool { return !slices.Contains(u.Scopes, sc) }); missing {
			s.refuse(w, ErrInsufficientScope, want)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, u)))
	})
}

// refuse answers a refused request: 403 insufficient_scope, or 401.
func (s *Server) refuse(w http.ResponseWriter, err error, scopes []string) {
	params := []string{fmt.Sprintf("resource_metadata=%q", s.MetadataURL())}
	status, msg := http.StatusUnauthorized, "a valid bearer token is required"
	switch {
	case errors.Is(err, ErrInsufficientScope):
		status, msg = http.StatusForbidden, "the token lacks a scope this request needs"
		params = append([]string{`error="insufficient_scope"`}, params...)
	case errors.Is(err, ErrInvalidToken):
		params = append([]string{`error="invalid_token"`}, params...)
	}
	if len(scopes) > 0 {
		params = append(params, fmt.Sprintf("scope=%q", strings.Join(scopes, " ")))
	}
	w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
	http.Error(w, msg, status)
}

// bearerToken returns the request's bearer token (RFC 6750 §2.1).
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "bearer") && token != ""
}

// toolsOfCalls reads a JSON-RPC body, bounded, and returns the tools its tools/call requests name (a batch may
// hold several), and the body to hand on. It decodes as the MCP server does (encoding/json, into a struct), so
// that both read the same name from a body that spells a key twice.
func toolsOfCalls(body io.ReadCloser) ([]string, io.ReadCloser, error) {
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, maxCallBytes+1))
	if err != nil {
		return nil, nil, err
	}
	if len(data) > maxCallBytes {
		return nil, nil, errors.New("body too large")
	}
	type call struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	var msgs []call
	if trimmed := bytes.TrimLeft(data, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '[' {
		_ = json.Unmarshal(data, &msgs)
	} else {
		var one call
		_ = json.Unmarshal(data, &one)
		msgs = append(msgs, one)
	}
	var tools []string
	for _, m := range msgs {
		if m.Method == "tools/call" {
			tools = append(tools, m.Params.Name)
		}
	}
	return tools, io.NopCloser(bytes.NewReader(data)), nil
}
