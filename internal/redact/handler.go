package redact

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
)

// Handler returns a slog.Handler that masks the secrets of s, in every form Encoded knows, in what it passes on
// to h: the message, attribute keys and values of every kind (strings, errors, byte slices, LogValuers, and any
// other value in the text a handler would format it as), group members at any depth, and the attributes given
// to WithAttrs. s may grow after the handler is made (an auth token, a secret argument): attributes given to
// WithAttrs are masked again once it has. The handler is safe for concurrent use when h is.
func Handler(h slog.Handler, s *Set) slog.Handler { return &handler{base: h, set: s} }

// handler is Handler's slog.Handler. ops are the WithGroup and WithAttrs calls made on it, unmasked, in order;
// derived is base with them applied, masked with the set as it was when the replacer key was current.
type handler struct {
	base    slog.Handler
	set     *Set
	ops     []handlerOp
	derived atomic.Pointer[derivedHandler]
}

// handlerOp is one WithGroup (group) or WithAttrs (attrs) call.
type handlerOp struct {
	group string
	attrs []slog.Attr
}

type derivedHandler struct {
	key *strings.Replacer // the set's replacer when h was built: a new one means new secrets
	h   slog.Handler
}

func (h *handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.base.Enabled(ctx, level)
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	next := h.inner()
	if h.set.Empty() {
		return next.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, h.set.Encoded(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.set.attr(a))
		return true
	})
	return next.Handle(ctx, out)
}

// inner is base with the ops applied, their attributes masked with the set's current secrets.
func (h *handler) inner() slog.Handler {
	if len(h.ops) == 0 {
		return h.base
	}
	key := h.set.r.Load() // read before masking: a newer set masks more, and the next record rebuilds
	if d := h.derived.Load(); d != nil && d.key == key {
		return d.h
	}
	next := h.base
	for _, op := range h.ops {
		if op.group != "" {
			next = next.WithGroup(op.group)
			continue
		}
		attrs := op.attrs
		if key != nil {
			attrs = make([]slog.Attr, len(op.attrs))
			for i, a := range op.attrs {
				attrs[i] = h.set.attr(a)
			}
		}
		next = next.WithAttrs(attrs)
	}
	h.derived.Store(&derivedHandler{key: key, h: next})
	return next
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	return h.with(handlerOp{attrs: slices.Clone(attrs)})
}

func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return h.with(handlerOp{group: name})
}

func (h *handler) with(op handlerOp) *handler {
	return &handler{base: h.base, set: h.set, ops: append(slices.Clip(h.ops), op)}
}

// attr returns a with the secrets of s masked in its key and value.
func (s *Set) attr(a slog.Attr) slog.Attr {
	return slog.Attr{Key: s.Encoded(a.Key), Value: s.logValue(a.Value)}
}

// logValue returns v with the secrets of s masked; v itself when it holds none.
func (s *Set) logValue(v slog.Value) slog.Value {
	v = v.Resolve()
	switch v.Kind() {
	case slog.KindString:
		if m := s.Encoded(v.String()); m != v.String() {
			return slog.StringValue(m)
		}
	case slog.KindGroup:
		attrs := v.Group()
		out := make([]slog.Attr, len(attrs))
		for i, a := range attrs {
			out[i] = s.attr(a)
		}
		return slog.GroupValue(out...)
	case slog.KindAny:
		return s.anyValue(v)
	}
	return v // numbers, booleans, durations and times hold no text
}

// encoded is a Set as a replacer that masks the encoded forms too, for scrub.
type encoded struct{ *Set }

func (e encoded) Replace(text string) string { return e.Encoded(text) }

// anyValue masks a KindAny value. An error keeps being an error, with its message masked. Maps and slices of the
// JSON kinds keep their shape. Any other value is kept when the texts handlers make of it (fmt's %+v, which
// calls String or Error, and encoding/json, which calls MarshalJSON or MarshalText) hold no secret, and
// becomes its masked %+v text otherwise.
func (s *Set) anyValue(v slog.Value) slog.Value {
	switch x := v.Any().(type) {
	case error:
		m := scrubError(x, s.Encoded, nil)
		if m == x && s.leaks(fmt.Sprintf("%+v", x)) { // a Format method that prints more than Error
			m = &scrubbed{msg: s.Encoded(x.Error())}
		}
		return slog.AnyValue(m)
	case []byte: // text and JSON handlers write it as a string and as base64
		if m := s.Encoded(string(x)); m != string(x) {
			return slog.StringValue(m)
		}
		return v
	case map[string]any, []any, map[string]string, map[string][]string:
		if out, changed := scrub(encoded{s}, x); changed {
			v = slog.AnyValue(out)
		}
	}
	text := fmt.Sprintf("%+v", v.Any())
	if !s.leaks(text) {
		js, err := json.Marshal(v.Any())
		if err != nil || !s.leaks(string(js)) {
			return v
		}
	}
	return slog.StringValue(s.Encoded(text))
}

// leaks reports whether text holds a secret of s in any form Encoded masks.
func (s *Set) leaks(text string) bool { return s.Encoded(text) != text }
