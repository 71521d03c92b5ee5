package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// A call's notifications (its progress, the log messages of the servers behind it) must reach the client before
// the call's result. mcp-go queues a server's notifications on the session's channel, which a goroutine of its own
// writes out, while the request's goroutine writes the result: a notification taken off the channel just as the
// result goes out is dropped (streamable HTTP) or written after the result (stdio). So mcpserve writes a call's
// notifications itself, before its tool handler returns, into the stream the result goes to: over stdio the output
// (one lock for both), over streamable HTTP the POST's response, as server-sent events. The order then holds by
// construction. mcp-go's queue is left for what has no such stream (a notification after its request ended).

// streamKey keys the stream of the request being served in its context.
type streamKey struct{}

// stream is where a request's notifications are written in order with its result.
type stream interface {
	// send writes the JSON-RPC message msg (a notification, a relayed request); false when the stream cannot take
	// it (its request has ended, or the response is not a stream of events).
	send(ctx context.Context, msg []byte) bool
}

// notify sends n to the client of the request ctx belongs to: into the request's stream, else through mcp-go's
// queue. Like mcp-go, it sends nothing before the session is initialized.
func notify(ctx context.Context, srv *server.MCPServer, n mcp.JSONRPCNotification) {
	if cs := server.ClientSessionFromContext(ctx); cs == nil || !cs.Initialized() {
		return
	}
	if s, ok := ctx.Value(streamKey{}).(stream); ok {
		if b, err := json.Marshal(n); err == nil && s.send(ctx, b) {
			return
		}
	}
	_ = srv.SendNotificationToClient(ctx, n.Method, n.Params.AdditionalFields)
}

// logWanted reports whether the client asked for log messages of level: the request's level under the stateless
// protocol (2026-07-28), else the level the session set with logging/setLevel (mcp-go's rule).
func logWanted(ctx context.Context, level mcp.LoggingLevel) bool {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return info.LogLevel != "" && level.ShouldSendTo(info.LogLevel)
	}
	s, ok := server.ClientSessionFromContext(ctx).(server.SessionWithLogging)
	return ok && level.ShouldSendTo(s.GetLogLevel())
}

func notification(method string, params map[string]any) mcp.JSONRPCNotification {
	return mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: method,
		Params: mcp.NotificationParams{AdditionalFields: params}}}
}

// stdioStream is the output of a stdio server: mcp-go writes each message with one Write, and a notification is
// written under the same lock, so a call's notifications precede its result.
type stdioStream struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *stdioStream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *stdioStream) send(_ context.Context, msg []byte) bool {
	_, _ = s.Write(append(msg[:len(msg):len(msg)], '\n'))
	return true
}

// ordered serves next with each POST's response wrapped in an httpStream that the request's calls write their
// notifications into. A POST that calls a tool not in tools is answered here (unknown.go): the stateless protocol
// (2026-07-28) has no session header to wait for, and a session-oriented request carries one that the
// SessionHandler has checked (mcp-go's own check is then skipped: the answer names only what tools/list shows).
func ordered(next http.Handler, tools *served, rs *relays) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, "reading the request: "+err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			if reply := tools.unknownCall(body); reply != nil {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(reply)
				return
			}
			if rs.take(r.Header.Get(server.HeaderKeySessionID), body) {
				w.WriteHeader(http.StatusAccepted) // the answer to a relayed request (relay.go)
				return
			}
		}
		if _, ok := w.(http.Flusher); ok && r.Method == http.MethodGet && rs != nil {
			if id := r.Header.Get(server.HeaderKeySessionID); id != "" {
				// The session's listening stream, which relayed requests outside a call go to.
				s := &httpStream{w: w, header: w.Header().Clone(), listening: true}
				defer s.end()
				defer rs.listen(id, s)()
				next.ServeHTTP(s, r)
				return
			}
		}
		if _, ok := w.(http.Flusher); !ok || r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		s := &httpStream{w: w, header: w.Header().Clone()}
		defer s.end()
		next.ServeHTTP(s, r.WithContext(context.WithValue(r.Context(), streamKey{}, s)))
	})
}

// httpStream is the response to one POST. mcp-go writes through it (headers are kept aside until its WriteHeader,
// so that the two writers never share the header map), and a call's notifications are written into it as events:
// the first turns the response into an event stream, and marks the session upgraded so that mcp-go writes the
// result as the stream's next event.
type httpStream struct {
	w      http.ResponseWriter
	header http.Header // mcp-go's headers, sent when the response starts

	// listening marks a session's listening stream (a GET), whose events mcp-go starts.
	listening bool

	mu      sync.Mutex
	started bool // the status line and headers are out
	over    bool // the request has ended: nothing more is written
}

func (s *httpStream) Header() http.Header { return s.header }

// Unwrap lets http.ResponseController reach the connection (mcp-go sets write deadlines through it).
func (s *httpStream) Unwrap() http.ResponseWriter { return s.w }

func (s *httpStream) WriteHeader(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.start(code)
}

func (s *httpStream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.start(http.StatusOK)
	return s.w.Write(p)
}

func (s *httpStream) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.start(http.StatusOK)
	s.w.(http.Flusher).Flush()
}

// start sends the status and header once; a later WriteHeader (mcp-go's, after a notification started the
// stream) is dropped. Callers hold mu; only mcp-go's goroutines, which wrote s.header, call it.
func (s *httpStream) start(code int) {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	for k := range h {
		if _, ok := s.header[k]; !ok {
			delete(h, k)
		}
	}
	for k, v := range s.header {
		h[k] = v
	}
	s.w.WriteHeader(code)
}

func (s *httpStream) send(ctx context.Context, b []byte) bool {
	cs, ok := server.ClientSessionFromContext(ctx).(server.SessionWithStreamableHTTPConfig)
	if !ok && !s.listening {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.over {
		return false
	}
	if !s.started && (s.listening || cs == nil) {
		return false // a listening stream mcp-go has not started yet
	}
	if !s.started {
		// mcp-go sets no header of a tools/call's response before its result: the stream's own go out, and
		// mcp-go's map is left to mcp-go's goroutines.
		cs.UpgradeToSSEWhenReceiveNotification() // before the result: mcp-go then writes it as an event
		s.started = true
		s.w.Header().Set("Content-Type", "text/event-stream")
		s.w.Header().Set("Cache-Control", "no-cache")
		s.w.WriteHeader(http.StatusOK)
	} else if s.w.Header().Get("Content-Type") != "text/event-stream" {
		return false
	}
	if _, err := s.w.Write(append(append([]byte("event: message\ndata: "), b...), '\n', '\n')); err != nil {
		return false
	}
	s.w.(http.Flusher).Flush()
	return true
}

// end marks the request ended: a notification after it goes through mcp-go's queue.
func (s *httpStream) end() {
	s.mu.Lock()
	s.over = true
	s.mu.Unlock()
}

var (
	_ stream              = (*stdioStream)(nil)
	_ stream              = (*httpStream)(nil)
	_ http.ResponseWriter = (*httpStream)(nil)
	_ http.Flusher        = (*httpStream)(nil)
)
