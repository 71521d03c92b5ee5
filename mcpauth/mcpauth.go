// Package mcpauth is where a host authorizes the mcp backend's requests to remote MCP servers (sse,
// streamable_http) that are protected by OAuth, as the MCP authorization specification (2025-11-25) asks.
//
// The backend asks the task's Authorizer (tool.TaskConfig.MCPAuthorizer) for the bearer of every request to a
// server, and hands it the server's challenge when the server refuses a request: a 401, or a 403 whose
// WWW-Authenticate says insufficient_scope. When the Authorizer says it has a new token, the request is sent once
// more with it; at most MaxAuthorizations challenges go to the Authorizer per server and call. An Authorizer that
// needs a person (the user must open an authorization URL) returns ErrAuthorizationRequired and the call ends
// with a recoverable result of kind authorization_required, which the LLM sees without any URL; the host shows
// the URL to the user its own way, and the next call tries again. A manifest's own Authorization header (a
// {auth.x()} template) wins: requests that carry one are left alone.
//
// URLs a remote party names (the resource metadata of a challenge, authorization-server metadata, registration
// and token endpoints) must be fetched through a Guard's client, which refuses private, loopback, link-local and
// cloud-metadata addresses when it dials.
//
// Client is the package's own Authorizer, for hosts that serve many end users over several replicas: discovery,
// client identity, PKCE, resource indicators and scopes as MCP asks; the user's step handed to the host
// (Config.OnAuthorization) and completed from its callback on any replica (Client.CompleteAuthorization); grants,
// pending authorizations and registrations in the host's Store, their secrets sealed (Sealer, NewAESGCM). It is
// built on go-sdk's oauthex (registration, metadata types) and golang.org/x/oauth2 (authorization URL, exchange,
// refresh).
package mcpauth

import (
	"context"
	"errors"
)

// MaxAuthorizations bounds the challenges a server's refusals hand to the Authorizer within one call (and the
// connect that call started): a server that refuses every new token ends the call with access_denied after this
// many (the MCP conformance scenario scope-retry-limit).
const MaxAuthorizations = 3

// Authorizer gives the bearer tokens of the requests to remote MCP servers and answers the servers' challenges.
// One Authorizer may serve many tasks and end users at once: it must be safe for concurrent use. Its errors must
// not carry a token, a code, a verifier, state or an authorization URL: they may be logged.
type Authorizer interface {
	// Token returns the bearer token for a request to s, "" to send the request without one (a server that
	// wants one answers with a challenge). It is called for every request, so it should answer from memory.
	// ctx bounds the call only. An error leaves the request unsent and ends the call: ErrAuthorizationRequired
	// and ErrAccessDenied as they are documented, any other error as authorization_required.
	Token(ctx context.Context, s Server) (string, error)
	// Challenge is called when s refused a request with c. nil means a new token is ready: Token is asked again
	// and the request is sent once more. ErrAuthorizationRequired (wrapped or not) means a person must act
	// first, and the call ends with a recoverable authorization_required result; ErrAccessDenied means the user
	// refused, and the call ends with access_denied; any other error ends it as authorization_required. ctx is
	// the refused request's: it carries the call's deadline.
	Challenge(ctx context.Context, s Server, c Challenge) error
}

// Server says which remote server a request goes to, and for whom.
type Server struct {
	// TaskID names the task, CallID the call whose request (or whose server's connect) this is; CallID is ""
	// for a request that belongs to no call (a session's own stream).
	TaskID, CallID string
	// Subject is the end user the task acts for (tool.TaskConfig.Subject): the key an Authorizer keeps grants
	// under. "" when the host named none: then only a grant of the host itself can serve the request.
	Subject string
	// Name identifies the server block within the manifest: the field path of the block ("mcp" for the
	// top-level block, "actions[2].execute.mcp" for an action's own server).
	Name string
	// URL is the server's URL as the manifest renders it: the protected resource (RFC 8707, RFC 9728).
	URL string
}

// Challenge is what a server said when it refused a request. Its URLs are named by the server: fetch them
// through a Guard. None of it reaches the LLM.
type Challenge struct {
	// Status is the HTTP status: 401, or 403 for insufficient_scope.
	Status int
	// Error is the Bearer challenge's error code (invalid_token, insufficient_scope), "" when none.
	Error string
	// Scopes are the Bearer challenge's scope, split at spaces: what the server wants the token to hold.
	Scopes []string
	// ResourceMetadata is the Bearer challenge's resource_metadata, the server's protected-resource metadata
	// URL (RFC 9728), "" when none.
	ResourceMetadata string
	// Header holds the WWW-Authenticate values as the server sent them, for what the fields above leave out.
	Header []string
}

var (
	// ErrAuthorizationRequired says that a person must act (open an authorization URL the Authorizer handed to
	// the host) before the server can be called: the call ends with a recoverable authorization_required result,
	// which nothing remembers: the next call asks the Authorizer again.
	ErrAuthorizationRequired = errors.New("mcpauth: authorization required")
	// ErrAccessDenied says that the user (or the authorization server) refused access: the call ends with a
	// recoverable access_denied result.
	ErrAccessDenied = errors.New("mcpauth: access denied")
)
