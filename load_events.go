package tool

import (
	"slices"
	"strings"
	"time"

	"github.com/commonagents-go/tool/allowlist"
	"github.com/commonagents-go/tool/events"
	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/internal/schema"
	"github.com/commonagents-go/tool/internal/suggest"
	"github.com/commonagents-go/tool/interp"
)

// event is one loaded event.
type event struct {
	def        *Event
	kind       string
	prepared   events.Event
	own        *schema.Schema
	message    *interp.Template
	timeout    time.Duration // 0 = none
	maxTimeout time.Duration // 0 = none

	// Derived after load, for deliveries (SPEC §9.1).
	pushed    bool              // payloads arrive through Deliver and the Router (webhook, subscription)
	filter    *allowlist.Filter // nil: every payload passes
	extract   *events.Compiled  // legacy extractions; nil when none
	secret    []byte            // the signing secret, rendered once (settings are fixed at load); nil: none
	secretErr string            // why the named secret could not be rendered: every delivery is misconfigured
	headers   bool              // the filter, extractions or message may read event.headers
	name      any               // def.Name as event.name, boxed once: not once per delivery
}

// index derives what deliveries (and a poll's items) need from the prepared event; the tool's settings are final
// by now.
func (e *event) index(t *Tool) {
	e.name = e.def.Name
	if e.prepared == nil {
		return // a problem was reported at load
	}
	var sources []string
	if c := e.prepared.Common(); c != nil {
		if c.Filter != nil {
			e.filter = allowlist.NewFilter(c.Filter)
			sources = append(sources, c.Filter.Source())
		}
		if len(c.Names) > 0 {
			e.extract = c
			for _, name := range c.Names {
				if x := c.Extract[name]; x != nil { // nil after a problem: index runs on broken manifests too
					sources = append(sources, x.Source())
				}
			}
		}
	}
	if e.message != nil {
		sources = append(sources, e.message.Source())
	}
	// A false positive only costs building a small map per delivery.
	e.headers = slices.ContainsFunc(sources, func(s string) bool { return strings.Contains(s, "headers") })

	pushed, ok := e.prepared.(events.Pushed)
	if !ok {
		return
	}
	e.pushed = true
	secret := pushed.Push().Secret
	if secret == nil {
		e.secret = t.opts.webhookSecret
		return
	}
	text, err := secret.RenderString(interp.ResolverFunc(t.setting))
	switch {
	case err != nil:
		e.secretErr = "the signing secret cannot be rendered: " + t.secrets.String(err.Error())
	case text == "":
		e.secretErr = "the signing secret renders empty: configure " + secret.Source()
	default:
		e.secret = []byte(text)
		t.secrets.Add(text)
	}
}

// messageRoots are the roots an event message may use (SPEC §4.2).
var messageRoots = []string{interp.RootEvent, interp.RootParameters, interp.RootSettings}

func (l *loader) events(docs []any) []*event {
	out := make([]*event, 0, len(l.m.Events))
	for i := range l.m.Events {
		def := &l.m.Events[i]
		p := field.NewPath("events").Index(i)
		doc, _ := asMap(docs[i])
		ev := &event{def: def}
		var ownProps []schema.Property
		ev.own, ownProps = l.schema(doc["parameters"], p.Child("parameters"))
		props := append(append([]schema.Property(nil), l.rootProps()...), ownProps...)
		check := l.checkerFor(props, false)

		if def.Message == "" {
			l.errs.Add(field.Required(p.Child("message"), "message is required: it is what the task receives"))
		} else {
			msg := l.checkerFor(props, true)
			ev.message, _ = l.collect(msg.Template(p.Child("message"), def.Message, messageRoots...))
		}
		ev.timeout = l.duration(p.Child("timeout"), def.Timeout)
		ev.maxTimeout = l.duration(p.Child("max_timeout"), def.MaxTimeout)
		if ev.timeout > 0 && ev.maxTimeout > 0 && ev.maxTimeout < ev.timeout {
			l.errs.Add(field.Invalid(p.Child("max_timeout"), "max_timeout (%s) must be at least timeout (%s)",
				def.MaxTimeout, def.Timeout))
		}
		l.prepareEvent(doc, p, ev, check)
		l.messageEventRefs(p.Child("message"), ev)
		out = append(out, ev)
	}
	return out
}

// collect records problems and passes the value through.
func (l *loader) collect(t *interp.Template, errs field.List) (*interp.Template, field.List) {
	l.errs = append(l.errs, errs...)
	return t, errs
}

func (l *loader) prepareEvent(doc map[string]any, p *field.Path, ev *event, check *checker) {
	registry := l.opts.receivers
	kind, receiver, value, ok := pick(l, p.Child("receive"), "receive type", doc["receive"], registry.Kinds(), registry.Lookup)
	if !ok {
		return
	}
	ev.kind = kind
	bp := p.Child("receive").Key(kind)
	block := &events.Block{Kind: kind, Tool: l.m.Name, Event: ev.def.Name, Path: bp, Value: value, Check: check}
	prepared, err := receiver.Prepare(l.ctx, block)
	l.errs = append(l.errs, blockErrors(bp, err)...)
	ev.prepared = prepared
}

// messageEventRefs checks that each {event.x} of the message names the payload, the event name, the headers or a
// legacy extraction the receive block declares.
func (l *loader) messageEventRefs(p *field.Path, ev *event) {
	if ev.message == nil || ev.prepared == nil {
		return
	}
	known := []string{"payload", "name", "headers"}
	if c := ev.prepared.Common(); c != nil {
		known = append(known, c.Names...)
	}
	for _, r := range ev.message.Refs() {
		if r.Root != interp.RootEvent || len(r.Steps) == 0 || r.Steps[0].IsIndex {
			continue
		}
		if name := r.Steps[0].Name; !slices.Contains(known, name) {
			l.errs.Add(field.Invalid(p, "{%s}: %q is neither payload, name, headers nor an extraction of the receive block's parameters%s",
				r.Text, name, suggest.Hint(name, known)))
		}
	}
}
