// Package httpspec validates, compiles and executes the HTTP request blocks that several backends share:
// stateless_http, stateful_session's create/execute/destroy, and the subscription and poll receivers.
//
// Compile runs at load. At call time Build renders a Compiled into an *http.Request (SPEC §4.3, §4.4), Do sends it
// and reads a bounded response, classifying every failure as recoverable (*runtime.Error), cancelled (wraps
// context.Canceled) or unrecoverable (wraps runtime.ErrUnrecoverable), and Output applies a response_path.
// Exchange does all three and returns a runtime.Result. SameHostRedirects and NoRedirects set the redirect policy
// of SPEC §4.4 on a client.
package httpspec

import (
	"net/textproto"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/runtime"
)

// Request is an HTTP request as a manifest writes it.
type Request struct {
	Method  string            `json:"method,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    any               `json:"body,omitempty"`
}

// Compiled is a Request with every template parsed.
type Compiled struct {
	Method  string
	URL     *interp.URL
	Headers map[string]*interp.Template
	Body    *interp.Value // nil when the request has no body

	headers atomic.Pointer[[]header] // Headers in name order, with canonical keys: made on first Build
}

// header is one of Headers, with its canonical key.
type header struct {
	name, key string
	t         *interp.Template
}

// headerList returns Headers in name order with their canonical keys, computed once.
func (c *Compiled) headerList() []header {
	if h := c.headers.Load(); h != nil {
		return *h
	}
	list := make([]header, 0, len(c.Headers))
	for name, t := range c.Headers {
		list = append(list, header{name: name, key: textproto.CanonicalMIMEHeaderKey(name), t: t})
	}
	slices.SortFunc(list, func(a, b header) int { return strings.Compare(a.name, b.name) })
	c.headers.Store(&list)
	return list
}

// Methods are the HTTP methods a manifest may use.
var Methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// Defaults are values a shared top-level block supplies to the requests of its actions.
type Defaults struct {
	// Path is where the defaults are written (the shared block), for problems found in them.
	Path    *field.Path
	Method  string
	BaseURL string
	Headers map[string]string
	Body    any
}

// Compile checks r at p. Fields absent from r come from d; d's headers merge under r's (r wins, compared
// case-insensitively). Templates may use roots.
func Compile(c runtime.Checker, p *field.Path, r Request, d Defaults, roots ...string) (*Compiled, field.List) {
	var errs field.List
	out := &Compiled{Headers: map[string]*interp.Template{}}

	method, mp := r.Method, p.Child("method")
	if method == "" && d.Method != "" {
		method, mp = d.Method, d.Path.Child("method")
	}
	switch {
	case method == "":
		errs.Add(field.Required(p.Child("method"), "method is required (one of %s)", strings.Join(Methods, ", ")))
	case !validMethod(strings.ToUpper(method)):
		errs.Add(field.Unsupported(mp, "unsupported HTTP method %q (use one of %s)",
			method, strings.Join(Methods, ", ")))
	default:
		out.Method = strings.ToUpper(method)
	}

	if r.URL == "" {
		errs.Add(field.Required(p.Child("url"), "url is required"))
	} else {
		u, e := c.URL(p.Child("url"), r.URL, d.BaseURL, roots...)
		errs = append(errs, e...)
		out.URL = u
	}

	headers := mergeHeaders(d.Headers, r.Headers)
	dups := duplicateHeaders(headers)
	for name, h := range headers {
		v, hp := h, p.Child("headers").Key(name)
		if _, own := r.Headers[name]; !own {
			hp = d.Path.Child("headers").Key(name)
		}
		if !httpguts.ValidHeaderFieldName(name) {
			errs.Add(field.Invalid(hp, "%q is not a valid HTTP header name", name))
			continue
		}
		if other, ok := dups[name]; ok {
			errs.Add(field.Duplicate(hp, "header %q is also given as %q (header names ignore case); keep one", name, other))
			continue
		}
		t, e := c.Template(hp, v, roots...)
		errs = append(errs, e...)
		out.Headers[name] = t
	}

	body, bp := r.Body, p.Child("body")
	if body == nil {
		body, bp = d.Body, d.Path.Child("body")
	}
	if body != nil {
		v, e := c.Value(bp, body, roots...)
		errs = append(errs, e...)
		out.Body = v
	}
	return out, errs
}

// Refs returns every reference the compiled request makes.
func (c *Compiled) Refs() []interp.Ref {
	var refs []interp.Ref
	if c.URL != nil {
		refs = append(refs, c.URL.Refs()...)
	}
	for _, h := range c.Headers {
		if h != nil {
			refs = append(refs, h.Refs()...)
		}
	}
	if c.Body != nil {
		refs = append(refs, c.Body.Refs()...)
	}
	return refs
}

func mergeHeaders(shared, own map[string]string) map[string]string {
	if len(shared) == 0 {
		return own
	}
	out := make(map[string]string, len(shared)+len(own))
	for k, v := range shared {
		out[k] = v
	}
	for k, v := range own {
		for sk := range out {
			if strings.EqualFold(sk, k) {
				delete(out, sk)
			}
		}
		out[k] = v
	}
	return out
}

// duplicateHeaders maps each header name that another name in headers equals but for case to the first such
// name in sorted order (which is kept), so that which value wins never depends on map order.
func duplicateHeaders(headers map[string]string) map[string]string {
	var dups map[string]string
	names := make([]string, 0, len(headers))
	for name := range headers {
		names = append(names, name)
	}
	sort.Strings(names)
	first := make(map[string]string, len(names))
	for _, name := range names {
		key := textproto.CanonicalMIMEHeaderKey(name)
		if kept, ok := first[key]; ok {
			if dups == nil {
				dups = map[string]string{}
			}
			dups[name] = kept
			continue
		}
		first[key] = name
	}
	return dups
}

func validMethod(m string) bool {
	for _, known := range Methods {
		if m == known {
			return true
		}
	}
	return false
}

// Duration parses a manifest duration; it must be positive. Empty means zero with no problem.
func Duration(p *field.Path, s string) (time.Duration, *field.Error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, field.Invalid(p, "%q is not a duration (use a Go duration such as \"30s\" or \"72h\")", s)
	}
	if d <= 0 {
		return 0, field.Invalid(p, "duration must be greater than zero")
	}
	return d, nil
}
