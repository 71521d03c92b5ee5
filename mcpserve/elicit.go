package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/runtime"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// A host that must send the user of a call somewhere out of band (an upstream's OAuth authorization, a payment) asks
// the call's client with a URL-mode elicitation (MCP 2025-11-25): an elicitation/create request on the call's
// stream when the client declared elicitation.url, else the call's answer becomes the error -32042
// (URLElicitationRequiredError) listing the URL, which such a client may act on and retry the call.

// URLElicitation is a URL-mode elicitation: the user is asked to open URL, out of band.
type URLElicitation struct {
	// ID is the elicitationId: unique, it names the elicitation in notifications/elicitation/complete.
	ID string
	// URL is where the user goes. It must not be pre-authenticated nor carry a secret: the client shows it.
	URL string
	// Message tells the user why, without a URL.
	Message string
}

// Errors of ElicitURL.
var (
	// ErrElicitationDeferred: the client did not declare URL-mode elicitation; the elicitation goes to the client
	// as the call's -32042 error when the call ends with a recoverable authorization_required result.
	ErrElicitationDeferred = errors.New("mcpserve: the client takes URL elicitations only as the call's -32042 error")
	// ErrNoCall: ctx belongs to no tools/call that a Server or SessionHandler serves.
	ErrNoCall = errors.New("mcpserve: no MCP call to elicit through")
)

// callState is what one tools/call knows of its client, for ElicitURL.
type callState struct {
	relay *relay // nil when the client has no way to be asked (no relay for the session)

	mu       sync.Mutex
	deferred []mcp.ElicitationParams
}

type callStateKey struct{}

// ElicitURL asks the client of the MCP call ctx belongs to (a tools/call a Server or a SessionHandler serves, and
// anything the call's task does on its behalf, such as an mcpauth.Config.OnAuthorization) to send its user to
// e.URL. When the client declared URL-mode elicitation, the request goes on the call's stream and ElicitURL returns
// the user's action: "accept" (the user agreed to open the URL: not that they finished there), "decline" or
// "cancel". Otherwise the elicitation is kept for the call's answer and ElicitURL returns ErrElicitationDeferred:
// when the call ends with a recoverable authorization_required result, the client gets the JSON-RPC error -32042
// listing the deferred elicitations instead; so too when the call's response is not a stream the request can go
// on. ctx bounds the wait for the client's answer. It is safe for concurrent use.
func ElicitURL(ctx context.Context, e URLElicitation) (string, error) {
	st, _ := ctx.Value(callStateKey{}).(*callState)
	if st == nil {
		return "", ErrNoCall
	}
	if e.ID == "" || e.URL == "" {
		return "", errors.New("mcpserve: a URL elicitation needs an ID and a URL")
	}
	p := mcp.ElicitationParams{Mode: mcp.ElicitationModeURL, Message: e.Message, ElicitationID: e.ID, URL: e.URL}
	if st.relay == nil || !urlMode(ctx) {
		st.deferOne(p)
		return "", ErrElicitationDeferred
	}
	params, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	raw, err := st.relay.Relay(ctx, runtime.MethodElicitation, params)
	if errors.Is(err, errNoStream) { // a response that is not an event stream: the call's answer carries it
		st.deferOne(p)
		return "", ErrElicitationDeferred
	}
	if err != nil {
		return "", fmt.Errorf("mcpserve: the URL elicitation: %w", err)
	}
	var res struct {
		Action string `json:"action"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return "", fmt.Errorf("mcpserve: the client's answer to the URL elicitation: %w", err)
	}
	switch res.Action {
	case "accept", "decline", "cancel":
		return res.Action, nil
	}
	return "", fmt.Errorf("mcpserve: the client answered the URL elicitation with action %q", res.Action)
}

// deferOne keeps p for the call's -32042 answer; it takes st.mu.
func (st *callState) deferOne(p mcp.ElicitationParams) {
	st.mu.Lock()
	st.deferred = append(st.deferred, p)
	st.mu.Unlock()
}

// urlMode reports whether the client of ctx's session declared URL-mode elicitation.
func urlMode(ctx context.Context) bool {
	cs, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo)
	if !ok {
		return false
	}
	c := cs.GetClientCapabilities().Elicitation
	return c != nil && c.URL != nil
}

// withCallState returns ctx carrying a call's state for ElicitURL, and the state.
func withCallState(ctx context.Context, r *relay) (context.Context, *callState) {
	st := &callState{relay: r}
	return context.WithValue(ctx, callStateKey{}, st), st
}

// urlRequired is the -32042 answer of a call that ended with res while elicitations were deferred, nil otherwise.
func (st *callState) urlRequired(res *tool.Result) error {
	if res == nil || !res.IsError || res.Error == nil || res.Error.Kind != runtime.KindAuthorizationRequired {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.deferred) == 0 {
		return nil
	}
	return mcp.URLElicitationRequiredError{Elicitations: st.deferred}
}
