package tool

import (
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"

	"github.com/commonagents-go/tool/internal/redact"
	"github.com/commonagents-go/tool/runtime"
)

// callSecrets are the secrets one call derives from the task's (SPEC §12.2 made strict): the encoded forms of
// each task secret its templates resolved, and each rendered request text (a header value, the URL, the body)
// that holds one, with its encoded forms. A server can echo any of them; they are masked in that call's result,
// errors and facts. They belong to the call, so the task's set does not grow with every request. Safe for
// concurrent use.
type callSecrets struct {
	task    *Task // its encodings cache: a rendered text comes back with every call, its encodings once
	mu      sync.Mutex
	needles redact.List // the resolved task secrets and their encodings: what makes a rendered text secret
	masks   redact.List // the needles' encodings, and the rendered texts holding a needle with theirs
}

// resolved records a task secret that the call's templates resolved.
func (c *callSecrets) resolved(secret string) {
	f := c.task.encodings().of(secret) // the task's cached forms: shared, not copied
	c.mu.Lock()
	defer c.mu.Unlock()
	c.needles.AddProbed(f.all, f.probes)
	c.masks.AddProbed(f.all[1:], f.encodedProbes) // the secret itself is the task's: its set masks it
}

// rendered makes each text of req and body that holds a resolved secret, in any of its forms, a secret of the
// call, with its encodings: each header value, the body, and the URL both whole and as the request target the
// server receives (path and query).
func (c *callSecrets) rendered(req *http.Request, body []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.urlMayHold(req.URL) {
		c.derive(req.URL.String())
		c.derive(req.URL.RequestURI()) // what the server receives: path and query
	}
	for _, vs := range req.Header {
		for _, v := range vs {
			c.derive(v)
		}
	}
	if len(body) > 0 {
		c.derive(string(body))
	}
}

// urlMayHold reports whether u's text can hold a needle: only when one of its parts does, since a needle is a form
// of one secret, which a template renders whole into one part. It spares encoding u for a URL without a secret.
// c.mu is held.
func (c *callSecrets) urlMayHold(u *url.URL) bool {
	for _, part := range [...]string{u.Host, u.Path, u.RawPath, u.RawQuery, u.Fragment, u.RawFragment, u.Opaque} {
		if c.needles.Contains(part) {
			return true
		}
	}
	return u.User != nil
}

// derive adds text and its encodings when it holds a needle; c.mu is held.
func (c *callSecrets) derive(text string) {
	if c.needles.Contains(text) {
		f := c.task.encodings().of(text)
		c.masks.AddProbed(f.all, f.probes)
	}
}

// value masks the call's derived secrets and the task's secrets in v; v is never modified.
func (c *callSecrets) value(task *redact.Set, v any) any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return task.ValueWith(&c.masks, v)
}

// Rendered implements runtime.RequestRecorder: the requests of a call feed its derived secrets.
func (v *callValues) Rendered(req *http.Request, body []byte) {
	if d := v.derived.Load(); d != nil {
		d.rendered(req, body)
	}
}

// Secret implements runtime.SecretRecorder: a task secret a backend sent on its own (an Authorizer's bearer)
// becomes one of the call's, with its encodings.
func (v *callValues) Secret(value string) {
	if v.encoded {
		v.noteSecret(value)
	}
}

// noteSecret records val when it is one of the task's secrets, for a call that derives secrets.
func (v *callValues) noteSecret(val any) {
	s, ok := val.(string)
	if !ok || s == "" {
		return
	}
	if !v.task.secrets.Has(s) {
		return
	}
	d := v.derived.Load()
	if d == nil {
		fresh := v.spare // an Invoke call's own storage
		if fresh == nil {
			fresh = &callSecrets{task: v.task}
		}
		v.derived.CompareAndSwap(nil, fresh)
		d = v.derived.Load()
	}
	d.resolved(s)
}

// scrub masks the call's derived secrets and the task's secrets in v; v is never modified.
func (c *call) scrub(v any) any {
	if d := c.derived(); d != nil {
		return d.value(c.task.secrets, v)
	}
	return c.task.secrets.Value(v)
}

// scrubContent returns a copy of blocks with the secrets masked in every text and data field; nil for none.
func (c *call) scrubContent(blocks []runtime.Content) []runtime.Content {
	if len(blocks) == 0 {
		return nil
	}
	str := func(s string) string {
		if s == "" {
			return s
		}
		v, _ := c.scrub(s).(string)
		// No call rendered what a server sends of its own (a secret of its headers or env, base64 in an image):
		// the encoded forms of every task secret are masked too.
		return c.task.secrets.Encoded(v)
	}
	meta := func(m map[string]any) map[string]any {
		if m == nil {
			return nil
		}
		v, _ := c.scrub(m).(map[string]any)
		return v
	}
	out := make([]runtime.Content, len(blocks))
	for n, b := range blocks {
		b.Text, b.Data, b.URI, b.Name = str(b.Text), str(b.Data), str(b.URI), str(b.Name)
		b.Title, b.Description = str(b.Title), str(b.Description)
		b.Annotations, b.Meta = meta(b.Annotations), meta(b.Meta)
		if r := b.Resource; r != nil {
			b.Resource = &runtime.ResourceContents{URI: str(r.URI), MIMEType: r.MIMEType, Text: str(r.Text), Blob: str(r.Blob),
				Meta: meta(r.Meta)}
		}
		out[n] = b
	}
	return out
}

// derived is the call's derived secrets, nil when it has none.
func (c *call) derived() *callSecrets {
	if c.values == nil {
		return nil
	}
	return c.values.derived.Load()
}

// encodings caches the encoded forms of the texts a task's calls render with a secret in them (a header such as
// "Bearer <token>" is the same in every call): computing them is most of what deriving costs. It keeps at most
// maxEncodings texts; past that, texts are encoded each time.
type encodings struct {
	m sync.Map // text → *forms
	n atomic.Int32
}

const maxEncodings = 256

// forms are a text and its encodings, with what a search for them needs to look for (redact.Probes): read only.
type forms struct {
	all           []string // the text, then redact.Encodings(text)
	probes        []string // redact.Probes(all)
	encodedProbes []string // redact.Probes(all[1:])
}

// of returns the forms of text, from the cache when it holds them.
func (e *encodings) of(text string) *forms {
	if v, ok := e.m.Load(text); ok {
		return v.(*forms)
	}
	all := append([]string{text}, redact.Encodings(text)...)
	f := &forms{all: all, probes: redact.Probes(all), encodedProbes: redact.Probes(all[1:])}
	if e.n.Add(1) <= maxEncodings {
		e.m.Store(text, f)
	}
	return f
}

// encodings returns the task's cache, made on first use so that an idle task carries only a pointer.
func (t *Task) encodings() *encodings {
	if e := t.encCache.Load(); e != nil {
		return e
	}
	t.encCache.CompareAndSwap(nil, &encodings{})
	return t.encCache.Load()
}
