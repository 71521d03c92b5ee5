// Package httpspectest holds test helpers for the HTTP backends: a runtime.Checker that parses without a manifest,
// a resolver over plain maps and an httptest server that records what it received.
package httpspectest

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/commonagents-go/tool/celenv"
	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/runtime"
)

// Roots resolves tokens from one value per root; paths that do not exist are null.
type Roots map[string]any

// Resolve implements interp.Resolver.
func (r Roots) Resolve(ref interp.Ref) (any, error) {
	v, _ := interp.Lookup(r[ref.Root], ref.Steps)
	return v, nil
}

// Trusted admits a settings token as a URL's leading prefix.
func Trusted(r interp.Ref) bool { return r.Root == interp.RootSettings }

// Checker is a runtime.Checker that parses templates without checking them against declarations. Warnings are
// collected; CEL is not supported.
type Checker struct {
	mu       sync.Mutex
	Warnings []*field.Error
}

// Template parses src.
func (c *Checker) Template(p *field.Path, src string, _ ...string) (*interp.Template, field.List) {
	t, err := interp.Parse(src)
	if err != nil {
		return nil, field.List{field.Invalid(p, "%v", err)}
	}
	return t, nil
}

// Value parses v.
func (c *Checker) Value(p *field.Path, v any, _ ...string) (*interp.Value, field.List) {
	return interp.ParseValueAt(v, p)
}

// Map parses each template of m.
func (c *Checker) Map(p *field.Path, m map[string]string, _ ...string) (map[string]*interp.Template, field.List) {
	out := map[string]*interp.Template{}
	var errs field.List
	for k, v := range m {
		t, e := c.Template(p.Key(k), v)
		errs = append(errs, e...)
		out[k] = t
	}
	return out, errs
}

// URL parses src, trusting settings as a prefix; a relative src is joined to base.
func (c *Checker) URL(p *field.Path, src, base string, _ ...string) (*interp.URL, field.List) {
	if base != "" && len(src) > 0 && src[0] == '/' {
		src = base + src
	}
	u, err := interp.ParseURL(src, Trusted)
	if err != nil {
		return nil, field.List{field.Invalid(p, "%v", err)}
	}
	return u, nil
}

// CEL is not supported.
func (c *Checker) CEL(p *field.Path, _ string, _ celenv.Scope) (*celenv.Program, field.List) {
	return nil, field.List{field.Unsupported(p, "CEL is not supported by httpspectest.Checker")}
}

// Warn records w.
func (c *Checker) Warn(w *field.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Warnings = append(c.Warnings, w)
}

var _ runtime.Checker = (*Checker)(nil)

// Received is what a Recorder saw of one request.
type Received struct {
	Method      string
	EscapedPath string
	RawQuery    string
	Query       url.Values
	Header      http.Header
	Host        string
	Body        []byte
}

// Recorder is an httptest server that records every request before handing it to its reply handler.
type Recorder struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []Received
}

// NewRecorder starts a Recorder answering with reply (an empty 200 when nil); it is closed when the test ends.
func NewRecorder(t testing.TB, reply http.HandlerFunc) *Recorder {
	t.Helper()
	r := &Recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, Received{Method: req.Method, EscapedPath: req.URL.EscapedPath(),
			RawQuery: req.URL.RawQuery, Query: req.URL.Query(), Header: req.Header.Clone(), Host: req.Host, Body: body})
		r.mu.Unlock()
		req.Body = io.NopCloser(bytes.NewReader(body))
		if reply != nil {
			reply(w, req)
		}
	}))
	t.Cleanup(r.Close)
	return r
}

// All returns the requests received so far.
func (r *Recorder) All() []Received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Received(nil), r.reqs...)
}

// JSON returns a handler answering body as application/json.
func JSON(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}
}
