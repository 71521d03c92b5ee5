package mcpauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/commonagents-go/tool/store"
	"golang.org/x/oauth2"
)

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
		if err = safeOAuth(err); !errors.Is(err, errInvalidGrant) && !errors.Is(err, ErrAccessDenied) {
			c.forgetDiscovery(ctx, p.URL) // the endpoint may have moved: discover it again next time
		}
		return done, fmt.Errorf("mcpauth: the code exchange: %w", err)
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
