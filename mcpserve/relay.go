package mcpserve

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/commonagents-go/tool/runtime"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// A gateway passes the requests of its upstream servers (sampling/createMessage, elicitation/create, roots/list)
// to the client of the MCP session whose call caused them, as they came, and the client's answer back as it
// came: mcp-go's server API for such requests is typed and keeps only the fields it knows. The request is written
// into the stream of the call it belongs to (as the call's notifications are, notify.go), else into the session's
// listening stream; the client's answer, a POST of a JSON-RPC response (a line of stdin over stdio), is taken off
// before mcp-go sees it, by its id, which only this session's relay knows.

// relayIDPrefix starts the ids of relayed requests: mcp-go numbers its own.
const relayIDPrefix = "relay-"

// errClientGone ends the relayed requests of a session that ended.
var errClientGone = errors.New("the MCP session has ended")

// errNoStream is a relayed request that was not sent: no stream to the client is open.
var errNoStream = errors.New("no stream to the client is open")

// relayReply is a client's answer to a relayed request.
type relayReply struct {
	Result json.RawMessage     `json:"result"`
	Error  *runtime.RelayError `json:"error"`
}

// relays holds the relayed requests waiting for their answers, of every session of a server. It is safe for
// concurrent use.
type relays struct {
	mu        sync.Mutex
	waiting   map[string]*waiter
	listeners map[string]stream // the listening stream of each session that has one
}

// listen records s as session's listening stream until the returned func is called.
func (rs *relays) listen(session string, s stream) func() {
	rs.mu.Lock()
	if rs.listeners == nil {
		rs.listeners = map[string]stream{}
	}
	rs.listeners[session] = s
	rs.mu.Unlock()
	return func() {
		rs.mu.Lock()
		if rs.listeners[session] == s {
			delete(rs.listeners, session)
		}
		rs.mu.Unlock()
	}
}

// listener returns session's listening stream, nil when it has none.
func (rs *relays) listener(session string) stream {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.listeners[session]
}

type waiter struct {
	session string
	reply   chan relayReply
}

// take delivers msg when it is the answer to a relayed request of session, and reports whether it was.
func (rs *relays) take(session string, msg []byte) bool {
	msg = bytes.TrimSpace(msg)
	if rs == nil || len(msg) == 0 || msg[0] != '{' || !bytes.Contains(msg, []byte(relayIDPrefix)) {
		return false
	}
	var m struct {
		ID     string              `json:"id"`
		Method string              `json:"method"`
		Result json.RawMessage     `json:"result"`
		Error  *runtime.RelayError `json:"error"`
	}
	if json.Unmarshal(msg, &m) != nil || m.Method != "" || len(m.ID) <= len(relayIDPrefix) ||
		m.ID[:len(relayIDPrefix)] != relayIDPrefix {
		return false
	}
	rs.mu.Lock()
	w := rs.waiting[m.ID]
	if w != nil && w.session == session {
		delete(rs.waiting, m.ID)
	}
	rs.mu.Unlock()
	if w == nil || w.session != session {
		return false
	}
	w.reply <- relayReply{Result: m.Result, Error: m.Error}
	return true
}

func (rs *relays) add(id string, w *waiter) {
	rs.mu.Lock()
	if rs.waiting == nil {
		rs.waiting = map[string]*waiter{}
	}
	rs.waiting[id] = w
	rs.mu.Unlock()
}

func (rs *relays) remove(id string) {
	rs.mu.Lock()
	delete(rs.waiting, id)
	rs.mu.Unlock()
}

// relay passes one session's upstream requests to its client (runtime.Relay).
type relay struct {
	rs      *relays
	session string
	caps    json.RawMessage
	// gone is closed when the session ends.
	gone <-chan struct{}
}

// Capabilities returns what the session's client declared of sampling, elicitation and roots.
func (r *relay) Capabilities() json.RawMessage { return r.caps }

// Relay writes the request into the stream of the call ctx belongs to, else the session's listening stream, and
// waits for the client's answer, the end of ctx or of the session.
func (r *relay) Relay(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := relayIDPrefix + hex.EncodeToString(b[:])
	msg, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      string          `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}{mcp.JSONRPC_VERSION, id, method, params})
	if err != nil {
		return nil, err
	}
	w := &waiter{session: r.session, reply: make(chan relayReply, 1)}
	r.rs.add(id, w)
	defer r.rs.remove(id)
	sent := false
	if s, ok := ctx.Value(streamKey{}).(stream); ok {
		sent = s.send(ctx, msg)
	}
	if !sent {
		if s := r.rs.listener(r.session); s != nil {
			sent = s.send(ctx, msg)
		}
	}
	if !sent {
		return nil, errNoStream
	}
	select {
	case rep := <-w.reply:
		if rep.Error != nil {
			return nil, rep.Error
		}
		return rep.Result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-r.gone:
		return nil, errClientGone
	}
}

// declared returns the sampling, elicitation and roots capabilities the client of ctx's session declared, nil when
// it declared none of them.
func declared(ctx context.Context) json.RawMessage {
	cs, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo)
	if !ok {
		return nil
	}
	c := cs.GetClientCapabilities()
	if c.Sampling == nil && c.Elicitation == nil && c.Roots == nil {
		return nil
	}
	out, err := json.Marshal(mcp.ClientCapabilities{Sampling: c.Sampling, Elicitation: c.Elicitation, Roots: c.Roots})
	if err != nil {
		return nil
	}
	return out
}

type relayKey struct{}

// SessionRelay returns the relay of the MCP session a SessionHandler's StartFunc starts a task for, to give the
// task (tool.TaskConfig.MCPRelay): the requests the task's MCP servers make during its calls then reach the
// session's client as they came, and the servers are offered only what that client declared. nil outside a
// StartFunc, and when the client declared none of sampling, elicitation and roots.
func SessionRelay(ctx context.Context) runtime.Relay {
	r, _ := ctx.Value(relayKey{}).(*relay)
	if r == nil {
		return nil
	}
	return r
}

var _ runtime.Relay = (*relay)(nil)

// stdioSession names the one session of a stdio server among the relays' waiters.
const stdioSession = "stdio"

// StdioRelay passes the requests of a task's MCP servers to the client of the stdio session a Server serves
// (ForStdioTask, ServeStdio): give it to the task as its tool.TaskConfig.MCPRelay. The servers are offered what the
// client declared at its initialize, as a SessionHandler's sessions are. It serves one ServeStdio; it is safe for
// concurrent use.
type StdioRelay struct {
	rs   relays
	r    relay
	caps atomic.Pointer[json.RawMessage]
	once sync.Once
	gone chan struct{}
}

// NewStdioRelay returns a relay for a task that ServeStdio will serve.
func NewStdioRelay() *StdioRelay {
	sr := &StdioRelay{gone: make(chan struct{})}
	sr.r = relay{rs: &sr.rs, session: stdioSession, gone: sr.gone}
	return sr
}

// Capabilities returns what the stdio client declared of sampling, elicitation and roots, as known at its latest
// call; nil before its first.
func (sr *StdioRelay) Capabilities() json.RawMessage {
	if c := sr.caps.Load(); c != nil {
		return *c
	}
	return nil
}

// Relay writes the request on the stdio output and waits for the client's answer, the end of ctx or of serving.
func (sr *StdioRelay) Relay(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return sr.r.Relay(ctx, method, params)
}

// declare records what the client declared, at each of its calls.
func (sr *StdioRelay) declare(caps json.RawMessage) {
	if caps == nil {
		return
	}
	if c := sr.caps.Load(); c == nil || !bytes.Equal(*c, caps) {
		sr.caps.Store(&caps)
	}
}

// end ends the waits of the requests relayed when serving ends.
func (sr *StdioRelay) end() { sr.once.Do(func() { close(sr.gone) }) }

var _ runtime.Relay = (*StdioRelay)(nil)
