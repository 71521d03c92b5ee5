package openapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/commonagents-go/tool/celenv"
	"github.com/commonagents-go/tool/internal/httpspec"
	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/runtime"
	"github.com/commonagents-go/tool/runtime/statelesshttp"
)

// pathPart is literal path text (param < 0) or the path parameter params[param].
type pathPart struct {
	lit   string
	param int
}

// splitPath splits a path template into literal text, escaped for a URL path (escapeLiteral), and the indexes of
// its parameters in params.
func splitPath(path string, params []param) []pathPart {
	var parts []pathPart
	last := 0
	for _, m := range pathTemplate.FindAllStringSubmatchIndex(path, -1) {
		if m[0] > last {
			parts = append(parts, pathPart{lit: escapeLiteral(path[last:m[0]]), param: -1})
		}
		name := path[m[2]:m[3]]
		for i, p := range params {
			if p.in == "path" && p.name == name {
				parts = append(parts, pathPart{param: i})
				break
			}
		}
		last = m[1]
	}
	if last < len(path) {
		parts = append(parts, pathPart{lit: escapeLiteral(path[last:]), param: -1})
	}
	return parts
}

// escapeLiteral percent-escapes the bytes of a document's literal path text that are not valid in an escaped URL
// path (non-ASCII, spaces, "|", "^", a "%" that starts no escape...): net/url would otherwise ignore the path it is
// given and re-escape the decoded one, turning the %2F of a value back into "/". "/", the sub-delimiters, ":", "@"
// and valid %XX escapes are kept, so the document's own escapes stay as written.
func escapeLiteral(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && i+2 < len(s) && ishex(s[i+1]) && ishex(s[i+2]):
			b.WriteByte(c)
		case c != '%' && (pathSafe(c) || c == '/'):
			b.WriteByte(c)
		default:
			const hex = "0123456789ABCDEF"
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

// pathSafe reports whether c stands for itself in a path segment (RFC 3986 pchar without pct-encoded).
func pathSafe(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		strings.IndexByte("-._~!$&'()*+,;=:@", c) >= 0
}

func ishex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// dotPiece reports whether the decoded path text p has a "." or ".." piece between slashes: what a server that
// decodes %2F before it normalises the path would resolve.
func dotPiece(p string) bool {
	for piece := range strings.SplitSeq(p, "/") {
		if piece == "." || piece == ".." {
			return true
		}
	}
	return false
}

// Initialize returns an instance that sends every call with in.HTTPClient under in.Limits. It does no I/O.
func (Backend) Initialize(_ context.Context, in *runtime.Init) (runtime.Instance, error) {
	if in.HTTPClient == nil {
		return nil, runtime.Unrecoverable(errors.New("openapi: no HTTP client"))
	}
	return &instance{client: in.HTTPClient, limits: in.Limits, mount: in.Mount, observe: in.Observe}, nil
}

// instance is stateless, so it is safe for concurrent use.
type instance struct {
	client  *http.Client
	limits  runtime.Limits
	mount   celenv.Mount // the task's files, read for files_from_mount (binary.go); nil when none
	observe func(ctx context.Context, name string, data map[string]any)
}

// Invoke sends one request for the operation, bounded by the block's timeout (else Limits.CallTimeout, else 30s)
// and by ctx (which carries that bound already when call.Bounded). The base URL, the block's headers and the auth they use render as in stateless_http; path
// parameters are each escaped as one path segment ("/" as %2F, so a value never adds a segment), and a value with
// a "." or ".." piece between its slashes, or parameters that together make one, is a recoverable
// invalid_arguments error and nothing is sent (SPEC §4.4); query, header and cookie parameters follow their
// OpenAPI style; the body is sent in the operation's media type (a raw body or file parts from their arguments
// or the task's mount, reported as FactFileSent). Failures are classified
// as stateless_http classifies them (SPEC §7.3).
func (i *instance) Invoke(ctx context.Context, a runtime.Action, call *runtime.Call) (*runtime.Result, error) {
	act, ok := a.(*Action)
	if !ok {
		return nil, runtime.Unrecoverable(fmt.Errorf("openapi: action of type %T", a))
	}
	if !call.Bounded {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, act.CallTimeout(i.limits))
		defer cancel()
	}
	req, err := act.Request.Build(ctx, call.Values)
	if err != nil {
		if rerr := httpspec.Recoverable(err); rerr != nil {
			return runtime.Fail(rerr), nil
		}
		return nil, err
	}
	files := &fileSource{ctx: ctx, mount: i.mount}
	if rerr := act.apply(req, call.Args, files); rerr != nil {
		return runtime.Fail(rerr), nil
	}
	files.report(ctx, i.observe, call.Action)
	res := &runtime.Result{BytesOut: max(req.ContentLength, 0)}
	resp, err := httpspec.Do(ctx, i.client, req, i.limits.ResponseBytes)
	if resp != nil {
		res.BytesIn = resp.Size
		res.ServerData = map[string]any{"status": resp.Status, "headers": map[string][]string(resp.Header)}
	}
	if err == nil {
		res.Output = output(resp)
		return res, nil
	}
	rerr := httpspec.Recoverable(err)
	if rerr == nil {
		return nil, err
	}
	if resp != nil && resp.Status >= 400 {
		res.ServerData["body"] = httpspec.Excerpt(resp.Raw, httpspec.ErrorBodyLimit)
	}
	res.Error = rerr
	return res, nil
}

// output is a response's result: its decoded JSON, or the body as text when the response says it is not JSON
// (text, CSV, XML...), so text that happens to parse as JSON stays text.
func output(resp *httpspec.Response) any {
	ct := resp.Header.Get("Content-Type")
	if ct == "" || isJSONMedia(ct) || len(resp.Raw) == 0 {
		return resp.Body
	}
	return strings.ToValidUTF8(string(resp.Raw), "\uFFFD")
}

// Teardown does nothing: the instance holds no resources.
func (*instance) Teardown(context.Context) error { return nil }

// apply adds the operation's parameters and body to req; a raw body's and file parts' bytes come through files.
func (a *Action) apply(req *http.Request, args map[string]any, files *fileSource) *runtime.Error {
	if err := a.applyPath(req.URL, args); err != nil {
		return err
	}
	var query, cookies []string
	if req.URL.RawQuery != "" {
		query = append(query, req.URL.RawQuery)
	}
	baseQuery := req.URL.Query()
	for _, f := range a.fixed {
		if f.in == "query" {
			query = append(query, url.QueryEscape(f.name)+"="+url.QueryEscape(f.value))
		}
	}
	for i := range a.params {
		p := &a.params[i]
		v, ok := args[p.arg]
		if !ok || v == nil {
			continue
		}
		if p.json { // described by JSON content: one value, its JSON text
			text, err := jsonText(v)
			if err != nil {
				return runtime.Errorf(runtime.KindInvalidArguments, "parameter %s cannot be encoded as JSON", p.arg)
			}
			v = string(text)
		}
		if obj, isObject := v.(map[string]any); isObject {
			if err := a.checkObject(p, obj, baseQuery); err != nil {
				return err
			}
		}
		switch p.in {
		case "query":
			query = appendQuery(query, p, v)
		case "header":
			text := simple(v, p.explode)
			if !validHeaderValue(text) {
				return runtime.Errorf(runtime.KindInvalidArguments,
					"parameter %s: a header value must not contain control characters such as CR, LF or NUL", p.arg)
			}
			// The block's headers (authentication) win over the LLM's values.
			if key := textproto.CanonicalMIMEHeaderKey(p.name); req.Header.Get(key) == "" {
				req.Header[key] = []string{text}
			}
		case "cookie":
			if list, isList := v.([]any); isList && p.explode {
				for _, e := range list { // an exploded array: one cookie per item
					cookies = append(cookies, p.name+"="+url.QueryEscape(interp.Text(e)))
				}
				continue
			}
			cookies = append(cookies, p.name+"="+url.QueryEscape(simple(v, false)))
		}
	}
	req.URL.RawQuery = strings.Join(query, "&")
	for _, f := range a.fixed {
		switch f.in {
		case "header":
			req.Header[textproto.CanonicalMIMEHeaderKey(f.name)] = []string{f.value}
		case "cookie":
			cookies = append(cookies, f.name+"="+url.QueryEscape(f.value))
		}
	}
	setCookies(req.Header, cookies)
	if a.body != nil && (a.body.kind == bodyRaw || len(a.body.files) > 0) {
		return a.body.setFiles(req, args, files)
	}
	if body, ok := args[BodyParameter]; ok && a.body != nil {
		return a.body.setBody(req, body, nil)
	}
	return nil
}

// setCookies adds the cookie parameters ("name=value" pairs) to the one Cookie header (RFC 6265 §5.4): after the
// block's own Cookie header when it sets one, whose cookies win over parameters of the same name.
func setCookies(h http.Header, cookies []string) {
	if len(cookies) == 0 {
		return
	}
	prev := h.Get("Cookie")
	if prev != "" {
		own := map[string]bool{}
		for c := range strings.SplitSeq(prev, ";") {
			name, _, _ := strings.Cut(strings.TrimSpace(c), "=")
			own[name] = true
		}
		kept := cookies[:0]
		for _, c := range cookies {
			if name, _, _ := strings.Cut(c, "="); !own[name] {
				kept = append(kept, c)
			}
		}
		cookies = append([]string{prev}, kept...)
	}
	h["Cookie"] = []string{strings.Join(cookies, "; ")}
}

// applyPath appends the operation's path, with its parameters, to the base URL's path. The path is refused when
// the values make a "." or ".." piece once decoded (the literal text has none: checkPath), or when net/url would
// not send it exactly as built.
func (a *Action) applyPath(u *url.URL, args map[string]any) *runtime.Error {
	var b strings.Builder
	b.WriteString(strings.TrimSuffix(u.EscapedPath(), "/"))
	start := b.Len()
	for _, part := range a.path {
		if part.param < 0 {
			b.WriteString(part.lit)
			continue
		}
		p := a.params[part.param]
		v, ok := args[p.arg]
		if !ok || v == nil {
			return runtime.Errorf(runtime.KindMissingFields, "path parameter %s is required", p.arg)
		}
		if p.json { // described by JSON content: its JSON text, escaped as one segment
			text, err := jsonText(v)
			if err != nil {
				return runtime.Errorf(runtime.KindInvalidArguments, "parameter %s cannot be encoded as JSON", p.arg)
			}
			v = string(text)
		}
		seg, err := pathValue(&p, v)
		if err != "" {
			return runtime.Errorf(runtime.KindInvalidArguments, "parameter %s: %s", p.arg, err)
		}
		b.WriteString(seg)
	}
	raw := b.String()
	op, err := url.PathUnescape(raw[start:])
	if err != nil {
		return runtime.Errorf(runtime.KindInvalidArguments, "the request path cannot be built")
	}
	if dotPiece(op) {
		return runtime.Errorf(runtime.KindInvalidArguments,
			"the path parameters together make a path segment \".\" or \"..\"")
	}
	decoded, err := url.PathUnescape(raw)
	if err != nil {
		return runtime.Errorf(runtime.KindInvalidArguments, "the request path cannot be built")
	}
	u.Path, u.RawPath = decoded, raw
	if u.EscapedPath() != raw {
		return runtime.Errorf(runtime.KindInvalidArguments, "the request path cannot be sent as escaped")
	}
	return nil
}

// simple renders a header or cookie value (style simple): arrays comma-separated, objects as k,v or k=v pairs.
func simple(v any, explode bool) string {
	switch v := v.(type) {
	case []any:
		items := make([]string, len(v))
		for i, e := range v {
			items[i] = interp.Text(e)
		}
		return strings.Join(items, ",")
	case map[string]any:
		var items []string
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if explode {
				items = append(items, k+"="+interp.Text(v[k]))
			} else {
				items = append(items, k, interp.Text(v[k]))
			}
		}
		return strings.Join(items, ",")
	}
	return interp.Text(v)
}

// validHeaderValue rejects every control character but horizontal tab (SPEC §4.3).
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// CallTimeout is the bound of one call: the block's timeout, else l.CallTimeout, else statelesshttp.DefaultTimeout.
func (a *Action) CallTimeout(l runtime.Limits) time.Duration {
	return statelesshttp.CallTimeout(a.Timeout, l)
}

var _ runtime.Bounded = (*Action)(nil)
