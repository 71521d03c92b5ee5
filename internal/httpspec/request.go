package httpspec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/runtime"
)

// Build renders c into a request bound to ctx. values resolves every token of the URL, headers and body.
//
// The URL renders per SPEC §4.4; headers render as text; the body renders into a fresh value tree that is
// JSON-encoded once, without HTML escaping (as interp.Text writes objects), and gets "Content-Type:
// application/json" unless a header sets Content-Type. GET and HEAD never carry a body: RFC 9110 gives one no
// meaning there and servers and proxies reject or drop it, so a body block on them is not rendered. A "Host"
// header is ignored, as net/http ignores it in client requests: the host comes only from the URL.
//
// Errors: a value that would change the URL's structure, or a header value holding a control character (CR, LF
// and NUL included, SPEC §4.3), is a recoverable *runtime.Error of kind invalid_arguments naming the token or
// header, and nothing is sent. A resolver's *runtime.Error stays recoverable with its kind and gains the token
// in its message. When ctx is already done, the error is classified as Do classifies it. Anything else, a URL
// prefix that is not an absolute http(s) URL included, wraps runtime.ErrUnrecoverable. No error carries a
// rendered value.
func (c *Compiled) Build(ctx context.Context, values interp.Resolver) (*http.Request, error) {
	u, err := c.URL.RenderUnchecked(values)
	if err != nil {
		return nil, renderError(ctx, "url", err)
	}
	var body io.Reader
	var encoded []byte
	if c.Body != nil && bodyAllowed(c.Method) {
		v, err := c.Body.Render(values)
		if err != nil {
			return nil, renderError(ctx, "body", err)
		}
		if encoded, err = appendJSON(make([]byte, 0, 256), v); err != nil {
			return nil, runtime.Unrecoverable(fmt.Errorf("encoding body: %w", err))
		}
		body = bytes.NewReader(encoded)
	}
	// NewRequestWithContext parses the URL (once: the check uses its parse). The method was checked at load, so
	// an error is the URL's; it quotes the URL, and is not kept.
	req, err := http.NewRequestWithContext(ctx, c.Method, u.Text, body)
	if err := u.Check(reqURL(req), err); err != nil {
		return nil, renderError(ctx, "url", err)
	}
	typed := false
	headers := c.headerList()
	vals := make([]string, len(headers)) // one array for every header's value
	for i, h := range headers {
		v, err := h.t.RenderString(values)
		if err != nil {
			return nil, renderError(ctx, "header "+h.name, err)
		}
		if !validHeaderValue(v) {
			return nil, runtime.Errorf(runtime.KindInvalidArguments,
				"header %s: value contains a control character such as CR, LF or NUL", h.name)
		}
		typed = typed || h.key == "Content-Type"
		vals[i] = v
		req.Header[h.key] = vals[i : i+1 : i+1]
	}
	if encoded != nil && !typed {
		req.Header["Content-Type"] = jsonContentType
	}
	runtime.RecordRequest(values, req, encoded) // rendered text holding a secret is scrubbed in its encoded forms
	return req, nil
}

var jsonContentType = []string{"application/json"}

// reqURL is req's URL, nil for no request.
func reqURL(req *http.Request) *url.URL {
	if req == nil {
		return nil
	}
	return req.URL
}

// bodyAllowed reports whether a request with method carries the compiled body.
func bodyAllowed(method string) bool { return method != http.MethodGet && method != http.MethodHead }

// validHeaderValue rejects every control character but horizontal tab, as net/http would at send time (where the
// failure could not be told apart from a broken connection).
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// renderError classifies a rendering failure of part (SPEC §4.4, §7.1). interp's errors carry token texts,
// never values.
func renderError(ctx context.Context, part string, err error) error {
	if ctx.Err() != nil {
		return contextError(ctx, part)
	}
	var unsafe *interp.UnsafeValueError
	if errors.As(err, &unsafe) {
		return runtime.Errorf(runtime.KindInvalidArguments, "%s: %s", part, unsafe.Error())
	}
	var rerr *runtime.Error
	if errors.As(err, &rerr) {
		out := *rerr
		// interp wraps as "{token}: <rerr>": keep that prefix, the token, in front of the message.
		if prefix, ok := strings.CutSuffix(err.Error(), rerr.Error()); ok {
			out.Message = prefix + rerr.Message
		}
		return &out
	}
	if errors.Is(err, interp.ErrPrefix) {
		return runtime.Unrecoverable(fmt.Errorf("%s: configuration: %w", part, err))
	}
	return runtime.Unrecoverable(fmt.Errorf("rendering %s: %w", part, err))
}
