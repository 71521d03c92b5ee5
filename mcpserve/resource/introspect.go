package resource

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// maxCachedTokens bounds the tokens remembered as verified; past it, they are forgotten.
const maxCachedTokens = 10000

// tokenCache remembers the users of the tokens that passed, by a digest of the token (never the token), until
// their exp. Past maxCachedTokens it is emptied.
type tokenCache struct {
	mu    sync.Mutex
	users map[[32]byte]User
}

// get returns the user of the token of digest d, if it passed and has not expired at now.
func (c *tokenCache) get(d [32]byte, now time.Time) (User, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.users[d]
	return u, ok && now.Before(u.Expiry)
}

func (c *tokenCache) put(d [32]byte, u User) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.users == nil || len(c.users) >= maxCachedTokens {
		c.users = map[[32]byte]User{}
	}
	c.users[d] = u
}

// introspect asks the RFC 7662 endpoint about an opaque token: it must be active, and its aud must name the
// resource. Verify remembers the answer until the token's exp.
func (s *Server) introspect(ctx context.Context, token string) (User, error) {
	now := s.cfg.Now()
	in := s.cfg.Introspection
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.URL, strings.NewReader(form.Encode()))
	if err != nil {
		return User{}, fmt.Errorf("%w: the introspection endpoint: %v", ErrInvalidToken, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(in.ClientID), url.QueryEscape(in.ClientSecret)) // RFC 6749 §2.3.1
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return User{}, fmt.Errorf("%w: the introspection endpoint: %v", ErrInvalidToken, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return User{}, fmt.Errorf("%w: the introspection endpoint answered %s", ErrInvalidToken, resp.Status)
	}
	var ans struct {
		Active bool            `json:"active"`
		Scope  string          `json:"scope"`
		Sub    string          `json:"sub"`
		Iss    string          `json:"iss"`
		Exp    int64           `json:"exp"`
		Nbf    int64           `json:"nbf"`
		Aud    json.RawMessage `json:"aud"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(&ans); err != nil {
		return User{}, fmt.Errorf("%w: the introspection answer does not decode", ErrInvalidToken)
	}
	var aud []string
	if json.Unmarshal(ans.Aud, &aud) != nil {
		var one string
		_ = json.Unmarshal(ans.Aud, &one)
		aud = []string{one}
	}
	switch {
	case !ans.Active:
		return User{}, fmt.Errorf("%w: not active", ErrInvalidToken)
	case ans.Exp == 0:
		return User{}, fmt.Errorf("%w: the introspection answer has no exp", ErrInvalidToken)
	case ans.Sub == "":
		return User{}, fmt.Errorf("%w: the introspection answer has no sub", ErrInvalidToken)
	case !oauthex.MatchesResource(aud, s.cfg.Resource):
		return User{}, fmt.Errorf("%w: aud does not name this resource", ErrInvalidToken)
	}
	exp := time.Unix(ans.Exp, 0)
	if now.Add(-s.cfg.Leeway).After(exp) {
		return User{}, fmt.Errorf("%w: expired", ErrInvalidToken)
	}
	if ans.Nbf != 0 && now.Add(s.cfg.Leeway).Before(time.Unix(ans.Nbf, 0)) {
		return User{}, fmt.Errorf("%w: not valid yet", ErrInvalidToken)
	}
	iss := ans.Iss
	if iss == "" {
		iss = in.URL // an endpoint that names no issuer speaks for itself
	} else if s.issuers[iss] == nil {
		return User{}, fmt.Errorf("%w: not issued by an accepted issuer", ErrInvalidToken)
	}
	return User{Issuer: iss, Subject: ans.Sub, Scopes: strings.Fields(ans.Scope), Expiry: exp}, nil
}
