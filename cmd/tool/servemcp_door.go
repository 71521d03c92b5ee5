package main

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/mcpauth"
	"github.com/commonagents-go/tool/mcpserve/resource"
)

// door holds serve-mcp's flags for serving as an OAuth protected resource (MCP 2025-11-25, server side).
type door struct {
	resourceURL   string
	issuers       listFlag
	scopes        listFlag
	toolScopes    listFlag // NAME=SCOPES
	introspect    string
	clientEnv     string // NAME: NAME_ID and NAME_SECRET hold the introspection client's credentials
	allowLoopback bool
	perUser       int
}

// listFlag is a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func doorFlags(fs *flag.FlagSet) *door {
	d := &door{}
	fs.StringVar(&d.resourceURL, "resource-url", "", "serve as the OAuth protected resource `URL` (the canonical URL "+
		"of the /mcp endpoint, which tokens' aud must name); needs --auth-issuer")
	fs.Var(&d.issuers, "auth-issuer", "accept the access tokens of the authorization server `ISSUER` (repeatable)")
	fs.Var(&d.scopes, "scope", "require `SCOPE` of every request's token (repeatable)")
	fs.Var(&d.toolScopes, "tool-scope", "require `NAME=SCOPES` (space-separated) of a call of tool NAME (repeatable)")
	fs.StringVar(&d.introspect, "introspect", "", "check tokens that are not JWTs at the RFC 7662 endpoint `URL`")
	fs.StringVar(&d.clientEnv, "introspect-client-env", "", "the introspection client's ID and secret are in the "+
		"environment variables `NAME`_ID and NAME_SECRET")
	fs.BoolVar(&d.allowLoopback, "auth-allow-loopback", false, "let the authorization servers be on loopback "+
		"addresses, over http too (local issuers, tests)")
	fs.IntVar(&d.perUser, "max-sessions-per-user", 8, "live MCP sessions of one user at most (`N`), with --resource-url")
	return d
}

// enabled reports whether any of the door's flags was given.
func (d *door) enabled() bool { return d.resourceURL != "" || len(d.issuers) > 0 }

// server checks the door's flags and returns its resource.Server, nil when they were not given. clock is the
// Tool's: token times are checked on it.
func (d *door) server(clock tool.Clock) (*resource.Server, error) {
	if !d.enabled() {
		if len(d.scopes)+len(d.toolScopes) > 0 || d.introspect != "" {
			return nil, errors.New("--scope, --tool-scope and --introspect need --resource-url")
		}
		return nil, nil
	}
	if d.resourceURL == "" || len(d.issuers) == 0 {
		return nil, errors.New("--resource-url and --auth-issuer go together")
	}
	if d.perUser < 1 {
		return nil, errors.New("--max-sessions-per-user must be positive")
	}
	cfg := resource.Config{Resource: d.resourceURL, Issuers: d.issuers, Now: clock.Now,
		Client: mcpauth.Guard{AllowLoopback: d.allowLoopback}.Client(), Scopes: d.scopeList()}
	for _, ts := range d.toolScopes {
		name, scopes, ok := strings.Cut(ts, "=")
		if !ok || name == "" || len(strings.Fields(scopes)) == 0 {
			return nil, fmt.Errorf("--tool-scope %q: want NAME=SCOPES", ts)
		}
		if cfg.ToolScopes == nil {
			cfg.ToolScopes = map[string][]string{}
		}
		cfg.ToolScopes[name] = append(cfg.ToolScopes[name], strings.Fields(scopes)...)
	}
	if d.introspect != "" {
		if d.clientEnv == "" {
			return nil, errors.New("--introspect needs --introspect-client-env")
		}
		id, secret := os.Getenv(d.clientEnv+"_ID"), os.Getenv(d.clientEnv+"_SECRET")
		if id == "" || secret == "" {
			return nil, fmt.Errorf("--introspect-client-env %s: %s_ID or %s_SECRET is empty or not set", d.clientEnv,
				d.clientEnv, d.clientEnv)
		}
		cfg.Introspection = &resource.Introspection{URL: d.introspect, ClientID: id, ClientSecret: secret}
	}
	return resource.New(cfg)
}

// scopeList is --scope, each split at spaces.
func (d *door) scopeList() []string {
	var out []string
	for _, s := range d.scopes {
		out = append(out, strings.Fields(s)...)
	}
	return out
}

// guard puts the door in front of sessions on mux: the metadata at its well-known path, and /mcp behind the
// token check.
func guard(mux *http.ServeMux, s *resource.Server, sessions http.Handler) {
	mux.Handle("GET "+s.MetadataPath(), s.Metadata())
	mux.Handle("/mcp", s.Handler(sessions))
}

// userOf is the owner of a request the door admitted: its user's key, the same for every token of theirs.
func userOf(r *http.Request) string {
	if u, ok := resource.UserFrom(r.Context()); ok {
		return u.Key()
	}
	return ""
}
