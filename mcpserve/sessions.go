package mcpserve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// StartFunc starts the task of a new MCP session, with the capability the SessionHandler serves; ctx bounds the
// start only. The handler owns the task: it closes it when the session ends.
type StartFunc func(ctx context.Context) (*tool.Task, error)

// Defaults of SessionConfig.
const (
	DefaultMaxSessions = 64
	DefaultIdleTimeout = 30 * time.Minute
)

// SessionConfig bounds the sessions of a SessionHandler. A zero field keeps its default.
type SessionConfig struct {
	// Capability is what the tools list shows; StartFunc must start tasks with the same.
	Capability tool.Capability
	// MaxSessions bounds the live sessions; at the bound a new session is refused with 503 and the live ones are
	// kept. Default DefaultMaxSessions.
	MaxSessions int
	// IdleTimeout ends a session that has been idle this long (see SessionHandler for what idle means). Default
	// DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Owner names who sends a request, for instance a digest of its bearer token; a session answers only the
	// requests of the owner that created it (others get 404, as for an unknown session). nil: one owner.
	Owner func(*http.Request) string
	// MaxSessionsPerOwner bounds the live sessions of one owner (Owner); at the bound the owner's new session is
	// refused with 429, beside MaxSessions for all. 0: no bound but MaxSessions.
	MaxSessionsPerOwner int
	// ActionNames serves each function under its action name (for an action expanded from an MCP server: the
	// upstream tool's name, which makes the gateway transparent) instead of its function name.
	ActionNames bool
	// Clock tells the idle ages; default tool.SystemClock.
	Clock tool.Clock
	// Options are passed to mcp-go's streamable HTTP server after the handler's own.
	Options []server.StreamableHTTPOption
}

// SessionHandler serves a tool's functions over streamable HTTP with one task per MCP session: each session gets
// its own task (its own allow list and backend sessions), started by the StartFunc on the session's first tools/call
// and closed when the client deletes the session, when the session idles out, or at Close. It keeps mcp-go's
// DNS-rebinding protection (a loopback request must name a loopback host) and serves only the session-oriented
// protocol revisions (up to 2025-11-25): the stateless 2026-07-28 core has no session to hold a task.
//
// A session is idle while no request of it is being served; its idle age is the time since its last request
// ended. That is this package's own definition (sessionActivity), to be replaced by the store's definition of a
// task's activity once that exists. It is safe for concurrent use.
type SessionHandler struct {
	mcp   *server.MCPServer
	http  http.Handler
	start StartFunc
	cfg   SessionConfig
	// relays passes the upstream requests of the sessions' tasks to their clients (relay.go).
	relays *relays
	// tools are the names served, replaced by Update.
	tools *served
	// retiring counts the tasks replaced by Update, closed once their calls have ended.
	retiring sync.WaitGroup

	mu sync.Mutex
	// tool is the Tool served, whose tasks start replaces (Update). start is guarded by mu too.
	tool     *tool.Tool
	sessions map[string]*session
	reserved int // sessions being created: counted against MaxSessions until they exist or fail
	// reservedBy counts reserved by owner, for MaxSessionsPerOwner; an owner without one has no entry.
	reservedBy map[string]int
	closed     bool
	active     int           // requests being served, listening streams aside
	drained    chan struct{} // closed when active drops to 0 after Close began
	stop       chan struct{}
	reaper     sync.WaitGroup
	// streams ends the listening streams at Close.
	streams    context.Context
	endStreams context.CancelFunc
}

// session is one MCP session: its owner, its task (started on the first call) and its activity.
type session struct {
	id, owner string
	activity  sessionActivity

	// gone is closed when the session ends: the requests relayed to its client stop waiting.
	gone chan struct{}

	mu    sync.Mutex
	calls *caller // nil until the task started
	err   error   // the task could not start
	ended bool    // the session ended: no task starts any more
}

// sessionActivity is a session's activity: the requests it is serving and when the last one ended. Guarded by
// SessionHandler.mu.
type sessionActivity struct {
	inFlight int
	lastEnd  time.Time
}

// idleAge is how long the session has been idle at now; 0 while it serves a request.
func (a sessionActivity) idleAge(now time.Time) time.Duration {
	if a.inFlight > 0 {
		return 0
	}
	return now.Sub(a.lastEnd)
}

// Handler returns a SessionHandler of t's functions (cfg.Capability) that starts a task per MCP session with start.
// Close ends the sessions.
func Handler(t *tool.Tool, start StartFunc, cfg SessionConfig) *SessionHandler {
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.Clock == nil {
		cfg.Clock = tool.SystemClock{}
	}
	h := &SessionHandler{start: start, cfg: cfg, sessions: map[string]*session{}, tool: t,
		stop: make(chan struct{}), relays: &relays{}}
	h.streams, h.endStreams = context.WithCancel(context.Background())
	// listChanged: Update changes the list.
	h.mcp, h.tools = newMCPServer(t, cfg.Capability, cfg.ActionNames, h.callerOf, server.WithToolCapabilities(true))
	opts := append([]server.StreamableHTTPOption{
		server.WithSessionIdManagerResolver(resolver{h}),
		server.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20251125, mcp.ProtocolVersion20250618,
			mcp.ProtocolVersion20250326, mcp.ProtocolVersion20241105),
	}, cfg.Options...)
	h.http = ordered(server.NewStreamableHTTPServer(h.mcp, opts...), h.tools, h.relays)
	h.reaper.Add(1)
	go h.reap()
	return h
}

// MCPServer returns the underlying mcp-go server. As with Server.MCPServer, a call of an unknown tool that reaches
// it other than through the handler gets mcp-go's own -32602, without the served names.
func (h *SessionHandler) MCPServer() *server.MCPServer { return h.mcp }

// Sessions reports how many sessions are live.
func (h *SessionHandler) Sessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions)
}

type reservationKey struct{}

// reservation is a slot of MaxSessions held by a request that may create a session.
type reservation struct{ used bool }

// ServeHTTP serves one request: a request without a session may create one (503 at the bound), a request of a
// session counts as its activity. After Close every request gets 503.
func (h *SessionHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	listen := r.Method == http.MethodGet
	if !h.enter(listen) {
		w.Header().Set("Retry-After", "5")
		http.Error(w, "the server is shutting down", http.StatusServiceUnavailable)
		return
	}
	if listen {
		// A listening stream ends at Close, which would otherwise wait for the client to hang up.
		ctx, cancel := context.WithCancel(r.Context())
		defer context.AfterFunc(h.streams, cancel)()
		defer cancel()
		r = r.WithContext(ctx)
	} else {
		defer h.leave()
	}
	id := r.Header.Get(server.HeaderKeySessionID)
	if id == "" && r.Method == http.MethodPost {
		h.serveNew(w, r)
		return
	}
	if id == "" {
		// mcp-go would make a session for a GET stream without one: sessions start with initialize only.
		http.Error(w, "missing "+server.HeaderKeySessionID+" header", http.StatusBadRequest)
		return
	}
	// A listening GET stream is not activity: a client that only listens idles out.
	s := h.touch(id, h.owner(r), !listen)
	if s == nil {
		// mcp-go does not check the session of a GET stream: unknown and other owners' sessions end here.
		http.Error(w, "unknown session", http.StatusNotFound)
		return
	}
	if !listen {
		defer h.done(s)
	}
	h.http.ServeHTTP(w, r)
}

// serveNew serves a request that may create a session, in a slot of MaxSessions reserved for it; 503 when none
// is free.
func (h *SessionHandler) serveNew(w http.ResponseWriter, r *http.Request) {
	owner := h.owner(r)
	h.mu.Lock()
	full := len(h.sessions)+h.reserved >= h.cfg.MaxSessions
	ownerFull := !full && h.cfg.MaxSessionsPerOwner > 0 && h.ownedLocked(owner) >= h.cfg.MaxSessionsPerOwner
	if !full && !ownerFull {
		h.reserved++
		if h.reservedBy == nil {
			h.reservedBy = map[string]int{}
		}
		h.reservedBy[owner]++
	}
	h.mu.Unlock()
	switch {
	case full:
		w.Header().Set("Retry-After", "60")
		http.Error(w, "too many MCP sessions; try again later", http.StatusServiceUnavailable)
		return
	case ownerFull:
		w.Header().Set("Retry-After", "60")
		http.Error(w, "too many MCP sessions of yours; end one, or try again later", http.StatusTooManyRequests)
		return
	}
	defer func() {
		h.mu.Lock()
		h.reserved--
		if h.reservedBy[owner]--; h.reservedBy[owner] == 0 {
			delete(h.reservedBy, owner)
		}
		h.mu.Unlock()
	}()
	h.http.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), reservationKey{}, &reservation{})))
}

// ownedLocked counts the live and reserved sessions of owner. Held: mu.
func (h *SessionHandler) ownedLocked(owner string) int {
	n := h.reservedBy[owner]
	for _, s := range h.sessions {
		if s.owner == owner {
			n++
		}
	}
	return n
}

// enter admits a request unless Close has begun; a request that is not a listening stream is counted until leave.
func (h *SessionHandler) enter(listen bool) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	if !listen {
		h.active++
	}
	return true
}

func (h *SessionHandler) leave() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.active--
	if h.active == 0 && h.drained != nil {
		close(h.drained)
		h.drained = nil
	}
}

func (h *SessionHandler) owner(r *http.Request) string {
	if h.cfg.Owner == nil || r == nil {
		return ""
	}
	return h.cfg.Owner(r)
}

// touch finds session id of owner and, when active, marks a request of it in flight; nil when there is no such
// session of that owner.
func (h *SessionHandler) touch(id, owner string, active bool) *session {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[id]
	if s == nil || s.owner != owner {
		return nil
	}
	if active {
		s.activity.inFlight++
	}
	return s
}

func (h *SessionHandler) done(s *session) {
	h.mu.Lock()
	s.activity.inFlight--
	s.activity.lastEnd = h.cfg.Clock.Now()
	h.mu.Unlock()
}

// Update serves t's functions from now on (t a Tool.Rediscover of the one served, after an upstream said its tools
// changed): new sessions' tasks are started by start, a task of t. Every live session is sent
// notifications/tools/list_changed and gets t's functions at its next tools/list; its next call runs on a task
// of t that start starts, and its old task is closed once the calls running on it have ended: they finish on the
// definitions they started with. It is safe for concurrent use.
func (h *SessionHandler) Update(t *tool.Tool, start StartFunc) {
	tools, names := serverTools(t, h.cfg.Capability, h.cfg.ActionNames, h.callerOf)
	h.mu.Lock()
	h.tool, h.start = t, start
	h.mu.Unlock()
	h.tools.replace(names)
	h.mcp.SetTools(tools...) // and tells every session: listChanged
}

// retire closes a session's task that Update replaced once the calls running on it have ended.
func (h *SessionHandler) retire(old *caller) {
	h.retiring.Add(1)
	go func() {
		defer h.retiring.Done()
		old.running.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), closeBound)
		defer cancel()
		_ = old.task.Close(ctx) // Close reports a teardown failure to the host's observer
	}()
}

// callerOf returns the caller of the session a tools/call belongs to, starting its task on the first call, or
// anew when Update changed the Tool since; the call is counted among the caller's running ones (caller.running).
func (h *SessionHandler) callerOf(ctx context.Context) (*caller, error) {
	cs := server.ClientSessionFromContext(ctx)
	if cs == nil {
		return nil, errors.New("the call belongs to no MCP session")
	}
	h.mu.Lock()
	s := h.sessions[cs.SessionID()]
	current, start := h.tool, h.start
	h.mu.Unlock()
	if s == nil {
		return nil, errors.New("the MCP session has ended")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return nil, errors.New("the MCP session has ended")
	}
	if s.err == nil && (s.calls == nil || s.calls.task.Tool() != current) {
		r := &relay{rs: h.relays, session: s.id, caps: declared(ctx), gone: s.gone}
		if r.caps != nil {
			ctx = context.WithValue(ctx, relayKey{}, r)
		}
		task, err := start(ctx)
		switch {
		case err != nil && s.calls == nil:
			s.err = fmt.Errorf("the session's task could not start: %w", err)
		case err != nil: // the old task serves on
			return nil, fmt.Errorf("the session's task of the changed tools could not start: %w", err)
		default:
			if s.calls != nil {
				h.retire(s.calls)
			}
			s.calls = &caller{task: task, owned: true, relay: r}
		}
	}
	if s.err != nil {
		return nil, s.err
	}
	s.calls.running.Add(1)
	return s.calls, nil
}

// end ends session id: later requests of it get 404 and its task is closed within ctx.
func (h *SessionHandler) end(ctx context.Context, id string) error {
	h.mu.Lock()
	s := h.sessions[id]
	delete(h.sessions, id)
	h.mu.Unlock()
	if s == nil {
		return nil
	}
	h.mcp.UnregisterSession(ctx, id)
	s.mu.Lock()
	calls := s.calls
	if !s.ended {
		close(s.gone)
	}
	s.ended = true // a call that found the session before it ended starts no task now
	s.mu.Unlock()
	if calls == nil {
		return nil
	}
	return calls.task.Close(ctx)
}

// reap ends the sessions idle for IdleTimeout or longer, checking four times per timeout.
func (h *SessionHandler) reap() {
	defer h.reaper.Done()
	every := h.cfg.IdleTimeout / 4
	t := h.cfg.Clock.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C():
			now := h.cfg.Clock.Now()
			var idle []string
			h.mu.Lock()
			for id, s := range h.sessions {
				if s.activity.idleAge(now) >= h.cfg.IdleTimeout {
					idle = append(idle, id)
				}
			}
			h.mu.Unlock()
			for _, id := range idle {
				ctx, cancel := context.WithTimeout(context.Background(), closeBound)
				_ = h.end(ctx, id) // Close reports a teardown failure to the host's observer
				cancel()
			}
			t.Reset(every)
		}
	}
}

// Close shuts the handler down within ctx: new requests get 503, listening streams end, the requests being served
// run to their end, and then every session ends with its task closed.
func (h *SessionHandler) Close(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	close(h.stop)
	var drained chan struct{}
	if h.active > 0 {
		drained = make(chan struct{})
		h.drained = drained
	}
	h.mu.Unlock()
	h.endStreams()
	h.reaper.Wait()
	var errs []error
	if drained != nil {
		select {
		case <-drained:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("waiting for the calls in flight: %w", ctx.Err()))
		}
	}
	h.mu.Lock()
	ids := make([]string, 0, len(h.sessions))
	for id := range h.sessions {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	for _, id := range ids {
		errs = append(errs, h.end(ctx, id))
	}
	h.retiring.Wait() // no call runs now: the replaced tasks are closing
	return errors.Join(errs...)
}

// resolver gives mcp-go a session ID manager bound to the request's owner.
type resolver struct{ h *SessionHandler }

func (r resolver) ResolveSessionIdManager(req *http.Request) server.SessionIdManager {
	m := manager{h: r.h}
	if req != nil {
		m.owner = r.h.owner(req)
		m.res, _ = req.Context().Value(reservationKey{}).(*reservation)
	}
	return m
}

// manager creates, checks and deletes the sessions of one request's owner.
type manager struct {
	h     *SessionHandler
	owner string
	res   *reservation
}

// Generate creates a session, in the slot the request reserved; "" when it holds none.
func (m manager) Generate() string {
	if m.res == nil || m.res.used {
		return ""
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := "mcp-session-" + hex.EncodeToString(b[:])
	m.res.used = true
	m.h.mu.Lock()
	m.h.sessions[id] = &session{id: id, owner: m.owner, activity: sessionActivity{lastEnd: m.h.cfg.Clock.Now()},
		gone: make(chan struct{})}
	m.h.mu.Unlock()
	return id
}

var errUnknownSession = errors.New("unknown session")

// Validate admits the live sessions of the manager's owner; any other ID is unknown (404), an ended session's
// too: it is forgotten.
func (m manager) Validate(id string) (bool, error) {
	m.h.mu.Lock()
	defer m.h.mu.Unlock()
	if s := m.h.sessions[id]; s != nil && s.owner == m.owner {
		return false, nil
	}
	return false, errUnknownSession
}

// Terminate ends a session of the manager's owner (the client's DELETE), closing its task.
func (m manager) Terminate(id string) (bool, error) {
	if _, err := m.Validate(id); err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeBound)
	defer cancel()
	_ = m.h.end(ctx, id) // Close reports a teardown failure to the host's observer
	return false, nil
}

var (
	_ http.Handler                    = (*SessionHandler)(nil)
	_ server.SessionIdManagerResolver = resolver{}
	_ server.SessionIdManager         = manager{}
)
