package tooltest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
)

// Response is one scripted response of a Server.
type Response struct {
	// Status defaults to 200.
	Status int
	// Header is added to the response.
	Header http.Header
	// Body is sent as is when it is a string or []byte, else JSON-encoded with Content-Type application/json.
	Body any
}

// Request is a request a Server received.
type Request struct {
	Method string
	// Path is the unescaped path; RawPath the path as sent.
	Path, RawPath string
	Query         url.Values
	Header        http.Header
	Body          []byte
}

// JSON decodes the request body; nil when it is not JSON.
func (r Request) JSON() any {
	var v any
	if json.Unmarshal(r.Body, &v) != nil {
		return nil
	}
	return v
}

// Server is an HTTP stub on loopback: each route serves its scripted responses in turn (the last one again
// once they run out) and every request is recorded, also those to unknown routes, which get 404.
type Server struct {
	*httptest.Server

	mu     sync.Mutex
	routes map[string]*route
	rec    recorder[Request]
}

type route struct {
	responses []Response
	next      int
}

// NewServer starts a Server that t closes when it ends.
func NewServer(t testing.TB) *Server {
	s := &Server{routes: map[string]*route{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Handle scripts the responses to method and path (the unescaped path, without the query), replacing any
// earlier script for them.
func (s *Server) Handle(method, path string, responses ...Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(responses) == 0 {
		responses = []Response{{}}
	}
	s.routes[method+" "+path] = &route{responses: responses}
}

// Requests returns the requests received so far, optionally only those to path.
func (s *Server) Requests(path ...string) []Request {
	all := s.rec.snapshot()
	if len(path) == 0 {
		return all
	}
	var out []Request
	for _, r := range all {
		if r.Path == path[0] {
			out = append(out, r)
		}
	}
	return out
}

// Wait returns the requests to path once there are at least n of them; it fails t after Timeout.
func (s *Server) Wait(t testing.TB, path string, n int) []Request {
	t.Helper()
	return s.rec.wait(t, "request(s) to "+path, n, func(r Request) bool { return r.Path == path })
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.rec.add(Request{Method: r.Method, Path: r.URL.Path, RawPath: r.URL.EscapedPath(), Query: r.URL.Query(),
		Header: r.Header.Clone(), Body: body})
	s.mu.Lock()
	rt := s.routes[r.Method+" "+r.URL.Path]
	var resp Response
	if rt != nil {
		resp = rt.responses[min(rt.next, len(rt.responses)-1)]
		rt.next++
	}
	s.mu.Unlock()
	if rt == nil {
		http.NotFound(w, r)
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	var out []byte
	switch b := resp.Body.(type) {
	case nil:
	case string:
		out = []byte(b)
	case []byte:
		out = b
	default:
		out, _ = json.Marshal(b)
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
	}
	if resp.Status == 0 {
		resp.Status = http.StatusOK
	}
	w.WriteHeader(resp.Status)
	_, _ = w.Write(out)
}
