package httpspec

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/commonagents-go/tool/internal/jsonvalue"
	"github.com/commonagents-go/tool/runtime"
)

// DefaultResponseLimit is the response body limit Do applies when given none (SPEC §14).
const DefaultResponseLimit = 10 << 20

// ErrorBodyLimit bounds how much of the body of an error status (≥ 400) Do reads, in bytes.
const ErrorBodyLimit = 64 << 10

// ExcerptLimit bounds the body excerpt an HTTP error status puts into its message, in bytes.
const ExcerptLimit = 512

// Response is a response read by Do.
type Response struct {
	// Status is the HTTP status code.
	Status int
	// Header is the response's header.
	Header http.Header
	// Body is the decoded body: the JSON value when the body is one JSON document, else the body as text (invalid
	// UTF-8 replaced); nil when the body is empty. JSON integers that fit int64 are int64, larger integers
	// json.Number (every digit kept), other numbers float64: the types JSONPath filters and CEL compare.
	Body any
	// Raw is the body as received.
	Raw []byte
	// Size is the number of body bytes read.
	Size int64
}

// Do sends req with client and reads the response body, at most limit bytes (DefaultResponseLimit when limit
// ≤ 0). The body is always drained and closed.
//
// Errors are classified for SPEC §7.1:
//   - status ≥ 400: the Response, whose body holds at most ErrorBodyLimit bytes (never result_too_large), and a
//     recoverable *runtime.Error with Status set and a message carrying the status and a body excerpt of at
//     most ExcerptLimit bytes; kind rate_limited for 429 (RetryAfter from
//     Retry-After, given in seconds or as an HTTP date; also read on 503), unavailable for 5xx, invalid_request
//     for other 4xx;
//   - a body over limit: recoverable result_too_large;
//   - ctx's deadline passed, or a timeout of the client or transport: recoverable timeout;
//   - once a connection was made the request may have reached the server: a timeout, a broken connection or a
//     body that cannot be read is then OutcomeUnknown (runtime.LostReply), which the root package makes not
//     retryable for an action not marked idempotent or read-only;
//   - ctx cancelled: an error wrapping context.Canceled, neither *runtime.Error nor unrecoverable, so the caller
//     can report a cancelled call;
//   - a redirect refused by SameHostRedirects or NoRedirects: recoverable denied, with the redirect response
//     (status and headers, Location included, for ServerData; the message does not name the target);
//   - DNS failure, a refused or failed connection, a TLS failure: wraps runtime.ErrUnrecoverable;
//   - a connection broken after it was made: recoverable unavailable.
//
// Messages name the method and host, never the URL's path or query (they can carry secrets).
func Do(ctx context.Context, client *http.Client, req *http.Request, limit int64) (*Response, error) {
	x := &exchange{}
	return x.do(ctx, client, req.WithContext(x.traced(req.Context())), limit)
}

// exchange is what one request allocates once: the trace that records whether it got a connection (without one
// it provably was not written) and its Response.
type exchange struct {
	connected atomic.Bool
	trace     httptrace.ClientTrace
	resp      Response
}

// traced returns ctx with a ClientTrace that records in x whether the request got a connection.
func (x *exchange) traced(ctx context.Context) context.Context {
	x.trace.GotConn = func(httptrace.GotConnInfo) { x.connected.Store(true) }
	return httptrace.WithClientTrace(ctx, &x.trace)
}

// do is Do for a request whose context x.traced made.
func (x *exchange) do(ctx context.Context, client *http.Client, req *http.Request, limit int64) (*Response, error) {
	if limit <= 0 {
		limit = DefaultResponseLimit
	}
	connected := &x.connected
	resp, err := client.Do(req)
	if err != nil {
		var denied *runtime.Error // a refused redirect: the response that asked for it, body closed, comes too
		if resp != nil && errors.As(err, &denied) {
			x.resp = Response{Status: resp.StatusCode, Header: resp.Header}
			return &x.resp, transportError(ctx, req, err, connected.Load())
		}
		return nil, transportError(ctx, req, err, connected.Load())
	}
	readToEnd := false
	defer func() { closeBody(resp.Body, readToEnd) }()
	x.resp = Response{Status: resp.StatusCode, Header: resp.Header}
	out := &x.resp
	if resp.StatusCode >= 400 {
		// An error body is only ever shown in part: read a bounded prefix and never fail on its size.
		out.Raw, _ = read(resp, min(limit, ErrorBodyLimit))
		out.Size = int64(len(out.Raw))
		out.Body = decodeBody(out.Raw)
		return out, statusError(resp, out.Raw)
	}
	if resp.ContentLength > limit {
		return out, tooLarge(limit)
	}
	raw, err := read(resp, limit+1)
	out.Size = int64(len(raw))
	readToEnd = err == nil && out.Size <= limit // closeBody then has nothing to drain
	if err != nil {
		if ctx.Err() != nil {
			return out, sentContextError(ctx, where(req), true)
		}
		return out, runtime.LostReply(runtime.KindUnavailable, "%s: reading the response failed", where(req))
	}
	if out.Size > limit {
		return out, tooLarge(limit)
	}
	out.Raw = raw
	out.Body = decodeBody(raw)
	return out, nil
}

// read reads at most n bytes of resp's body. A body of announced length is read into a buffer of that size (and
// to its end, so the connection is reused).
func read(resp *http.Response, n int64) ([]byte, error) {
	if cl := resp.ContentLength; cl >= 0 && cl < n {
		buf := make([]byte, cl+1) // one byte more: reading stops at the body's end, not before it
		m, err := io.ReadFull(resp.Body, buf)
		switch {
		case (err == io.EOF || err == io.ErrUnexpectedEOF) && int64(m) == cl:
			return buf[:m], nil // the whole body, and its end
		case err == io.EOF:
			return buf[:m], io.ErrUnexpectedEOF // cut short: the connection broke
		case err != nil:
			return buf[:m], err
		}
		// A body longer than announced: read on, within n.
		rest, err := readAll(resp.Body, n-int64(m), 0)
		return append(buf, rest...), err
	}
	return readAll(resp.Body, n, max(resp.ContentLength, 0))
}

// readAll reads at most n bytes of r; size is the expected length, 0 when unknown.
func readAll(r io.Reader, n, size int64) ([]byte, error) {
	var buf bytes.Buffer
	if size > 0 {
		buf.Grow(int(min(size, n)) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(io.LimitReader(r, n))
	return buf.Bytes(), err
}

func tooLarge(limit int64) *runtime.Error {
	return runtime.Errorf(runtime.KindResultTooLarge, "the response body is larger than the limit of %d bytes", limit)
}

// closeBody drains a little so the connection can be reused (unless the body was read to its end), then closes.
func closeBody(body io.ReadCloser, readToEnd bool) {
	if !readToEnd {
		_, _ = io.Copy(io.Discard, io.LimitReader(body, 4<<10))
	}
	_ = body.Close()
}

// where names a request in messages: method and host, never path or query.
func where(req *http.Request) string { return req.Method + " " + req.URL.Host }

// contextError reports a request that ctx ended: a deadline is a recoverable timeout, a cancellation wraps
// context.Canceled.
func contextError(ctx context.Context, what string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return runtime.Errorf(runtime.KindTimeout, "%s: no response before the call's deadline", what)
	}
	return fmt.Errorf("%s: %w", what, ctx.Err())
}

// sentContextError is contextError for a request that may have reached the server (sent): its deadline leaves the
// outcome unknown.
func sentContextError(ctx context.Context, what string, sent bool) error {
	if sent && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return runtime.LostReply(runtime.KindTimeout, "%s: no response before the call's deadline", what)
	}
	return contextError(ctx, what)
}

// transportError classifies a failed exchange; sent says a connection was made, so the request may have reached
// the server.
func transportError(ctx context.Context, req *http.Request, err error, sent bool) error {
	if ctx.Err() != nil {
		return sentContextError(ctx, where(req), sent)
	}
	lost := runtime.Errorf
	if sent {
		lost = runtime.LostReply
	}
	var denied *runtime.Error // from CheckRedirect
	if errors.As(err, &denied) {
		return denied
	}
	// url.Error's text quotes the whole URL: keep only what it wraps.
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	if unreachable(err) {
		return runtime.Unrecoverable(fmt.Errorf("%s: endpoint unreachable: %w", where(req), err))
	}
	var timeout interface{ Timeout() bool }
	if errors.As(err, &timeout) && timeout.Timeout() {
		return lost(runtime.KindTimeout, "%s: the request timed out", where(req))
	}
	return lost(runtime.KindUnavailable, "%s: the connection failed", where(req))
}

// unreachable reports DNS, dial and TLS failures: the endpoint cannot be used at all (SPEC §7.1).
func unreachable(err error) bool {
	var (
		dns   *net.DNSError
		op    *net.OpError
		cert  *tls.CertificateVerificationError
		rec   tls.RecordHeaderError
		alert tls.AlertError
		auth  x509.UnknownAuthorityError
		host  x509.HostnameError
		inv   x509.CertificateInvalidError
	)
	return errors.As(err, &dns) || errors.As(err, &op) && op.Op == "dial" || errors.As(err, &cert) ||
		errors.As(err, &rec) || errors.As(err, &alert) || errors.As(err, &auth) || errors.As(err, &host) ||
		errors.As(err, &inv)
}

func statusError(resp *http.Response, raw []byte) *runtime.Error {
	var e *runtime.Error
	msg := "HTTP " + strconv.Itoa(resp.StatusCode) + " " + http.StatusText(resp.StatusCode)
	if x := Excerpt(raw, ExcerptLimit); x != "" {
		msg += ": " + x
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		e = runtime.Errorf(runtime.KindRateLimited, "%s", msg)
	case resp.StatusCode >= 500:
		e = runtime.Errorf(runtime.KindUnavailable, "%s", msg)
	default:
		e = runtime.Errorf(runtime.KindInvalidRequest, "%s", msg)
	}
	e.Status = resp.StatusCode
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		e.RetryAfter = RetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return e
}

// RetryAfter parses a Retry-After header value, delay-seconds or an HTTP date, into a delay from now. It is 0
// when v is empty, malformed or in the past.
func RetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 || s > int64(365*24*time.Hour/time.Second) {
			return 0
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// Excerpt returns at most max bytes of raw as trimmed, valid UTF-8 text, cut at a rune boundary and ending in
// "…" when cut.
func Excerpt(raw []byte, max int) string {
	cut := len(raw) > max
	if cut {
		raw = raw[:max]
		for i := len(raw) - 1; i >= 0 && i >= len(raw)-utf8.UTFMax; i-- {
			if utf8.RuneStart(raw[i]) {
				if !utf8.FullRune(raw[i:]) {
					raw = raw[:i]
				}
				break
			}
		}
	}
	s := strings.TrimSpace(strings.ToValidUTF8(string(raw), "\uFFFD"))
	if cut {
		s += "…"
	}
	return s
}

// decodeBody decodes raw as one JSON document, or returns it as text.
func decodeBody(raw []byte) any {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	v, err := jsonvalue.Decode(raw)
	if err != nil {
		if utf8.Valid(raw) {
			return string(raw)
		}
		return strings.ToValidUTF8(string(raw), "\uFFFD")
	}
	return v
}
