package runtime

import (
	"context"
	"encoding/json"
)

// The requests an MCP server may make of its client during a call, which a Relay passes on.
const (
	MethodSampling    = "sampling/createMessage"
	MethodElicitation = "elicitation/create"
	MethodRoots       = "roots/list"
)

// Relay passes the requests an MCP server makes during a call (sampling/createMessage, elicitation/create,
// roots/list) to the host's own MCP client as they came, and the client's answers back as they came: the hook of a
// gateway (tool.TaskConfig.MCPRelay, mcpserve.SessionRelay), where the typed hooks (ElicitFunc, SampleFunc,
// RootsFunc) are a library host's. It must be safe for concurrent use.
type Relay interface {
	// Capabilities returns the client capabilities the host's client declared, as a JSON object: a server is
	// offered sampling, elicitation and roots exactly as they appear there, and nothing else.
	Capabilities() json.RawMessage
	// Relay sends a server's request, method and params as received, to the host's client and returns the
	// client's result as it came. An error answer of the client is a *RelayError, passed to the server as it
	// came. ctx bounds the wait (the call's deadline); when it ends, or the client goes away, Relay returns an
	// error and the server gets {"action":"cancel"} for an elicitation, a JSON-RPC error otherwise.
	Relay(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// RelayError is a JSON-RPC error a client answered to a relayed request.
type RelayError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error returns the client's message with its code.
func (e *RelayError) Error() string { return "the client answered an error: " + e.Message }

// Root is one of the host's roots (MCP roots/list): a file:// URI and an optional name.
type Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

// RootsFunc lists the host's roots when a server asks (roots/list); nil when the host has no hook, and servers are
// then not offered roots. ctx ends with the call.
type RootsFunc func(ctx context.Context) ([]Root, error)
