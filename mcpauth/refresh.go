package mcpauth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/commonagents-go/tool/facts"
	"golang.org/x/oauth2"
)

// refreshMark bounds how long a replica may hold a grant's refresh: past it, another replica takes it over.
const refreshMark = 30 * time.Second

// errRefreshBusy: another replica is refreshing the grant and did not finish within the wait.
var errRefreshBusy = errors.New("mcpauth: another replica is refreshing the grant")

// refresh renews the grant at key with its refresh token, spending it once across replicas: a compare-and-swap
// marks the record as being refreshed (from seen, the record the caller holds, or whatever is there now), only the
// replica whose mark won asks the token endpoint, and the next swap writes the new tokens. A replica that finds
// another's mark waits for its result; one that finds a record newer than seen with a valid token takes it.
// invalid_grant deletes the grant: the user's step comes next.
func (c *Client) refresh(ctx context.Context, s Server, key string, seen []byte) (*cached, error) {
	k := cacheKey{s.Subject, s.URL}
	wait := 20 * time.Millisecond
	for {
		var g grantRecord
		raw, err := c.rec.get(ctx, key, &g)
		if err != nil {
			return nil, fmt.Errorf("mcpauth: reading the grant: %w", err)
		}
		now := c.now()
		valid := g.Expiry.IsZero() || now.Add(c.cfg.RefreshBefore).Before(g.Expiry)
		if string(raw) != string(seen) && g.Refreshing.IsZero() && valid {
			if e := c.load(ctx, k, key); e.access != "" {
				return e, nil // another replica refreshed it
			}
		}
		if !g.Refreshing.IsZero() && now.Before(g.Refreshing) {
			select { // another replica holds the refresh: wait for its result
			case <-ctx.Done():
				return nil, errRefreshBusy
			case <-time.After(wait):
			}
			if wait *= 2; wait > time.Second {
				wait = time.Second
			}
			seen = raw
			continue
		}
		var sec grantSecrets
		if err := c.rec.vault.open(key, g.Sealed, &sec); err != nil || sec.Refresh == "" {
			return nil, errors.New("mcpauth: the grant has no refresh token here")
		}
		marked := g
		marked.Refreshing = now.Add(refreshMark)
		markedRaw, err := c.sealGrant(key, &marked, sec)
		if err != nil {
			return nil, err
		}
		if ok, err := c.rec.swap(ctx, key, raw, markedRaw); err != nil {
			return nil, fmt.Errorf("mcpauth: marking the grant: %w", err)
		} else if !ok {
			continue // changed meanwhile: look again
		}
		return c.spend(ctx, s, k, key, marked, markedRaw, sec)
	}
}

// spend asks the token endpoint for new tokens with the refresh token of the grant this replica marked.
func (c *Client) spend(ctx context.Context, s Server, k cacheKey, key string, g grantRecord, markedRaw []byte,
	sec grantSecrets) (*cached, error) {
	rep := ReporterFrom(ctx)
	rep.secret(sec.Refresh, sec.Secret)
	cfg := oauthConfig(g.ClientID, sec.Secret, g.Method, "", g.Token, "", g.Scopes)
	tok, err := cfg.TokenSource(c.oauthContext(ctx), &oauth2.Token{RefreshToken: sec.Refresh, Expiry: time.Unix(1, 0)}).Token()
	if err != nil {
		err = safeOAuth(err)
		if errors.Is(err, errInvalidGrant) || errors.Is(err, errInvalidClient) {
			_ = c.rec.st.Delete(ctx, key) // back to the user's step
			c.rec.vault.forget(key)
			c.put(k, &cached{key: key})
		} else {
			g.Refreshing = time.Time{} // let the next try have it
			if back, err := c.sealGrant(key, &g, sec); err == nil {
				_, _ = c.rec.swap(ctx, key, markedRaw, back)
			}
		}
		rep.fact(facts.MCPAuthorized, map[string]any{"server": s.Name, "resource": g.Resource, "issuer": g.Issuer,
			"subject": SubjectDigest(s.Subject), "outcome": "refresh_failed", "error": err.Error()})
		return nil, fmt.Errorf("mcpauth: refreshing the grant: %w", err)
	}
	rep.secret(tok.AccessToken, tok.RefreshToken)
	next := g
	next.Refreshing, next.Expiry, next.Scopes, next.Issued = time.Time{}, c.expiry(tok), grantedScopes(tok, g.Scopes), c.now()
	refresh := tok.RefreshToken
	if refresh == "" {
		refresh = sec.Refresh // not rotated
	}
	nextRaw, err := c.sealGrant(key, &next, grantSecrets{Access: tok.AccessToken, Refresh: refresh, Secret: sec.Secret})
	if err != nil {
		return nil, err
	}
	if ok, err := c.rec.swap(ctx, key, markedRaw, nextRaw); err != nil || !ok {
		return nil, fmt.Errorf("mcpauth: storing the refreshed grant: the record changed or failed (%v)", err)
	}
	e := &cached{access: tok.AccessToken, expiry: next.Expiry, issued: next.Issued, refresh: true, raw: nextRaw, key: key}
	c.put(k, e)
	rep.fact(facts.MCPAuthorized, map[string]any{"server": s.Name, "resource": g.Resource, "issuer": g.Issuer,
		"scopes": next.Scopes, "expires_at": next.Expiry, "subject": SubjectDigest(s.Subject), "outcome": "refreshed"})
	return e, nil
}
