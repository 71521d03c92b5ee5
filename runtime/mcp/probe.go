package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/commonagents-go/tool/internal/httpspec"
)

// probe records what the HTTP requests of one call did, which mcp-go's transports do not report: whether a
// connection was ever made (else the request provably was not written), the Retry-After of a 429 or 503 answer,
// and whether a streamed reply held an event that is not JSON. It is safe for concurrent use.
type probe struct {
	mu         sync.Mutex
	connected  bool
	retryAfter time.Duration
	malformed  bool
	// ended is set when a JSON reply's body was read to its end: the HTTP exchange was whole, so a reply cut
	// short inside it is malformed, not a lost connection.
	ended bool
	// call is the context of the attempt the probe watches (its deadline is the call's), set before the request
	// is sent: a server's request on the call's stream is answered within it (peer.go), not within the 30 s that
	// mcp-go gives a server's request.
	call context.Context
}

type probeKey struct{}

// withProbe returns ctx carrying p, for the requests made with it.
func withProbe(ctx context.Context, p *probe) context.Context {
	return context.WithValue(ctx, probeKey{}, p)
}

// written reports whether a request of the call may have been written: a connection was made.
func (p *probe) written() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.connected
}

func (p *probe) answer() (retryAfter time.Duration, malformed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.retryAfter, p.malformed
}

// wholeReply reports whether a JSON reply's body was read to its clean end.
func (p *probe) wholeReply() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ended
}

// probing is the RoundTripper of a remote server's client: it feeds the probe of the request's call, if any.
type probing struct{ base http.RoundTripper }

func (t probing) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	p, _ := ctx.Value(probeKey{}).(*probe)
	if p == nil { // a session's own stream (SSE, or streamable HTTP's listening GET), or no call's request
		resp, err := t.base.RoundTrip(req)
		if unreadable, ok := ctx.Value(streamKey{}).(func()); ok && err == nil && eventStream(resp) {
			resp.Body = sniffEvents(resp.Body, unreadable)
		}
		return resp, err
	}
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) {
		p.mu.Lock()
		p.connected = true
		p.mu.Unlock()
	}}
	resp, err := t.base.RoundTrip(req.WithContext(httptrace.WithClientTrace(ctx, trace)))
	if err != nil {
		return resp, err
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		p.mu.Lock()
		p.retryAfter = httpspec.RetryAfter(resp.Header.Get("Retry-After"), time.Now())
		p.mu.Unlock()
	}
	if eventStream(resp) {
		resp.Body = sniffEvents(resp.Body, p.sawMalformed)
	} else {
		resp.Body = &endWatch{ReadCloser: resp.Body, p: p}
	}
	return resp, nil
}

// endWatch records in its probe that the body ended cleanly (io.EOF, not a connection cut mid-body).
type endWatch struct {
	io.ReadCloser
	p *probe
}

func (e *endWatch) Read(b []byte) (int, error) {
	n, err := e.ReadCloser.Read(b)
	if err == io.EOF {
		e.p.mu.Lock()
		e.p.ended = true
		e.p.mu.Unlock()
	}
	return n, err
}

// end ends the call waiting on the probe's session (cancel is its attempt's), for cause: errUnreadable records a
// reply that is not JSON.
func (p *probe) end(cause error, cancel context.CancelFunc) {
	if cause == errUnreadable {
		p.sawMalformed()
	}
	cancel()
}

// sawMalformed records a reply that is not JSON.
func (p *probe) sawMalformed() {
	p.mu.Lock()
	p.malformed = true
	p.mu.Unlock()
}

func eventStream(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "text/event-stream"
}

// streamKey marks the context of a session's stream; its value is the func called when the stream carries an
// event that is not JSON.
type streamKey struct{}

// probingClient returns a copy of hc (its redirect policy, jar and timeout kept) whose transport feeds probes.
func probingClient(hc *http.Client) *http.Client {
	c := *hc
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = probing{base: base}
	return &c
}

// maxEvent bounds the data of one server-sent event the sniffer keeps to check; a longer one is left to mcp-go.
const maxEvent = 16 << 20

// sniffEvents returns body, which it reads as mcp-go does, calling malformed for every event whose data is not
// JSON: mcp-go skips such an event, and the call waiting for it would otherwise wait until its deadline.
func sniffEvents(body io.ReadCloser, malformed func()) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		r := bufio.NewReader(io.TeeReader(body, pw))
		var data bytes.Buffer
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				pw.CloseWithError(err)
				return
			}
			line = bytes.TrimRight(line, "\r\n")
			switch {
			case len(line) == 0:
				if data.Len() > 0 && data.Len() <= maxEvent && !json.Valid(data.Bytes()) {
					malformed()
				}
				data.Reset()
			case bytes.HasPrefix(line, []byte("data:")) && data.Len() <= maxEvent:
				if data.Len() > 0 {
					data.WriteByte('\n')
				}
				data.Write(bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" ")))
			}
		}
	}()
	return &sniffed{ReadCloser: pr, body: body}
}

// sniffed closes the original body with the pipe, which ends the sniffing goroutine.
type sniffed struct {
	io.ReadCloser
	body io.ReadCloser
}

func (s *sniffed) Close() error {
	_ = s.ReadCloser.Close()
	return s.body.Close()
}
