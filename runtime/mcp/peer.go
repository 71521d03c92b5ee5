package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/commonagents-go/tool/runtime"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// peer answers what a server asks of its client during a call: through the host's typed hooks (a library host),
// or, with a relay, by passing the request to the host's own MCP client as it came (a gateway).
type peer struct {
	elicit runtime.ElicitFunc
	sample runtime.SampleFunc
	roots  runtime.RootsFunc
	relay  runtime.Relay
	// wait bounds a relayed request that reaches the client outside any call's context (a stdio or SSE server's
	// request, which mcp-go hands over with the stream's context) when no call is in flight.
	wait time.Duration
	// sole returns the context of the only call in flight on the task's servers, nil when there are none or
	// several: a request that comes outside a call's context belongs to it.
	sole func() context.Context
}

// newClient returns a client that speaks the handshake protocol (up to 2025-11-25). Servers of the stateless
// 2026-07-28 core still accept it, and mcp-go v1.2 servers drop progress notifications of stateless requests.
// With a typed hook it offers that capability and hands the server's requests to it; a relay is installed on the
// transport after Start (relayRequests), and its capabilities are offered at initialize (capabilities).
func newClient(tr transport.Interface, p peer) *client.Client {
	opts := []client.ClientOption{client.WithLegacyProtocolOnly()}
	if p.relay != nil {
		return client.NewClient(tr, opts...)
	}
	if p.elicit != nil {
		opts = append(opts, client.WithElicitationHandler(elicitor(p.elicit)))
	}
	if p.sample != nil {
		opts = append(opts, client.WithSamplingHandler(sampler(p.sample)))
	}
	if p.roots != nil {
		opts = append(opts, client.WithRootsHandler(rooter(p.roots)))
	}
	return client.NewClient(tr, opts...)
}

// capabilities returns what the relay's client declared of sampling, elicitation and roots, to offer the server.
func (p peer) capabilities() mcp.ClientCapabilities {
	var caps mcp.ClientCapabilities
	if p.relay == nil {
		return caps
	}
	var declared struct {
		Roots       json.RawMessage `json:"roots"`
		Sampling    json.RawMessage `json:"sampling"`
		Elicitation json.RawMessage `json:"elicitation"`
	}
	if json.Unmarshal(p.relay.Capabilities(), &declared) != nil {
		return caps
	}
	// Each key by itself: one the SDK cannot read leaves the others offered.
	if declared.Roots != nil && json.Unmarshal(declared.Roots, &caps.Roots) != nil {
		caps.Roots = nil
	}
	if declared.Sampling != nil && json.Unmarshal(declared.Sampling, &caps.Sampling) != nil {
		caps.Sampling = nil
	}
	if declared.Elicitation != nil && json.Unmarshal(declared.Elicitation, &caps.Elicitation) != nil {
		caps.Elicitation = nil
	}
	return caps
}

// relayRequests makes the relay answer the server's requests, replacing mcp-go's typed handlers (which keep only
// the fields they know); it runs after Client.Start, which installs those.
//
// mcp-go posts a streamable HTTP server's answer with the context of the call whose stream carried the request,
// which ends with the call: as the client goes away, the session's end cancels the call while that post is under
// way, and the server waits for an answer that never comes. So answer (a streamable HTTP server's) posts every
// answer itself, bounded by answerBound only; the session's close waits for it.
func (p peer) relayRequests(tr transport.Interface, answer func(context.Context, *transport.JSONRPCResponse) error,
	life context.Context, track func() func()) {
	b, ok := tr.(transport.BidirectionalInterface)
	if !ok || p.relay == nil {
		return
	}
	caps := p.capabilities()
	b.SetRequestHandler(func(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
		defer track()() // the session's close waits for the answer, which its server may hold its end for
		resp := p.relayed(ctx, caps, req)
		if answer == nil {
			return resp, nil
		}
		actx, cancel := context.WithTimeout(context.WithoutCancel(life), answerBound)
		defer cancel()
		_ = answer(actx, resp) // best effort, as mcp-go's own: the server's request has its own bound
		return nil, nil
	})
}

// answerBound bounds posting an answer whose call has ended.
const answerBound = 10 * time.Second

// relayed passes req to the relay's client and returns the answer for the server: the client's result or error as
// it came; when the client does not answer in time or goes away, {"action":"cancel"} for an elicitation and a
// JSON-RPC error otherwise. A method the client did not declare is -32601.
func (p peer) relayed(ctx context.Context, caps mcp.ClientCapabilities, req transport.JSONRPCRequest) *transport.JSONRPCResponse {
	offered := map[string]bool{runtime.MethodSampling: caps.Sampling != nil,
		runtime.MethodElicitation: caps.Elicitation != nil, runtime.MethodRoots: caps.Roots != nil}
	if req.Method == string(mcp.MethodPing) {
		return transport.NewJSONRPCResultResponse(req.ID, json.RawMessage(`{}`))
	}
	if !offered[req.Method] {
		return transport.NewJSONRPCErrorResponse(req.ID, mcp.METHOD_NOT_FOUND,
			fmt.Sprintf("the client does not support %s", req.Method), nil)
	}
	params, err := json.Marshal(req.Params)
	if err != nil || req.Params == nil {
		params = json.RawMessage(`{}`)
	}
	if pr, ok := ctx.Value(probeKey{}).(*probe); ok && pr.call != nil {
		// On the call's own stream: the call's deadline bounds the wait, not mcp-go's 30 s for a server's request
		// (when that passes first, relayRequests posts the answer itself).
		ctx = pr.call
	} else {
		if call := p.sole(); call != nil {
			// The request came on the server's own stream: it belongs to the one call in flight.
			ctx = call
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.wait)
		defer cancel()
	}
	res, err := p.relay.Relay(ctx, req.Method, params)
	var rerr *runtime.RelayError
	switch {
	case errors.As(err, &rerr):
		e := &mcp.JSONRPCErrorDetails{Code: rerr.Code, Message: rerr.Message}
		if len(rerr.Data) > 0 {
			e.Data = rerr.Data
		}
		return &transport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: req.ID, Error: e}
	case err != nil && req.Method == runtime.MethodElicitation:
		return transport.NewJSONRPCResultResponse(req.ID, json.RawMessage(`{"action":"cancel"}`))
	case err != nil:
		return transport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR,
			fmt.Sprintf("the client did not answer %s: %v", req.Method, err), nil)
	}
	return transport.NewJSONRPCResultResponse(req.ID, res)
}

// rooter adapts the host's roots hook to mcp-go's handler.
type rooter runtime.RootsFunc

// ListRoots asks the host.
func (f rooter) ListRoots(ctx context.Context, _ mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	roots, err := f(ctx)
	if err != nil {
		return nil, err
	}
	out := &mcp.ListRootsResult{Roots: make([]mcp.Root, 0, len(roots))}
	for _, r := range roots {
		out.Roots = append(out.Roots, mcp.Root{URI: r.URI, Name: r.Name})
	}
	return out, nil
}
