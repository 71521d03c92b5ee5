package tool

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/commonagents-go/tool/allowlist"
)

// The first step of a webhook's path: an Inbound prepared for a Tool, once, whatever the number of its tasks.

// inbound is one Inbound prepared for a tool: parsed, signatures checked and filters' conjuncts evaluated once,
// then delivered to any number of its tasks.
type inbound struct {
	in         *Inbound
	received   time.Time
	payload    any
	deliveryID string
	item       string         // a polled item's fingerprint; "" for a pushed payload
	events     []pushedEvent  // by the tool's event index
	few        [2]pushedEvent // events' array for a tool of at most two events
}

// pushedEvent is an Inbound prepared for one event.
type pushedEvent struct {
	ev     *event
	tried  bool   // the event takes this payload at all
	reason string // a verdict for every task: bad_signature or misconfigured
	detail string
	vars   map[string]any      // CEL variables: event and now
	match  *allowlist.Delivery // nil when the event has no filter
	pre    *extraction         // legacy extractions, evaluated on first use; nil when none
	event  map[string]any      // the `event` variable and message root
	parent *inbound
}

// varsPool holds the maps of pushedEvent.vars that release gave back.
var varsPool = sync.Pool{New: func() any { return make(map[string]any, 2) }}

// release gives the events' CEL variable maps back for the next inbound, once p is done with: by then no filter
// evaluation and no allowlist.Delivery of p is in use. (The `event` maps stay: an extraction may return one.)
func (p *inbound) release() {
	for i := range p.events {
		if vars := p.events[i].vars; vars != nil {
			p.events[i].vars, p.events[i].match = nil, nil
			clear(vars)
			varsPool.Put(vars)
		}
	}
}

// extraction holds an event's legacy extraction values, computed once per inbound whatever the number of tasks.
type extraction struct {
	once   sync.Once
	values map[string]any
	err    error
}

// prepare parses in for t's events. Everything here is the same for every task of the tool.
//
// Signatures are checked on the raw bytes first (SPEC §12.6): a payload that every event refuses is never
// parsed, so a forged or unsigned body costs no more than reading it. A payload some event takes is parsed only
// within Limits.InboundDepth and Limits.InboundValues.
func (t *Tool) prepare(ctx context.Context, in *Inbound) (*inbound, error) {
	if in == nil {
		return nil, errors.New("tool: deliver: nil Inbound")
	}
	if max := t.opts.limits.InboundBytes; int64(len(in.Body)) > max {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrPayloadTooLarge, len(in.Body), max)
	}
	if in.Event != "" && !t.hasEvent(in.Event) {
		return nil, fmt.Errorf("%w: %q", ErrUnknownEvent, in.Event)
	}
	p := &inbound{in: in, received: in.ReceivedAt, deliveryID: in.DeliveryID}
	if n := len(t.events); n <= len(p.few) {
		p.events = p.few[:n]
	} else {
		p.events = make([]pushedEvent, n)
	}
	if p.received.IsZero() {
		p.received = t.opts.clock.Now()
	}
	if p.deliveryID == "" {
		p.deliveryID = deliveryID(in.Headers)
	}
	if !t.verify(p) {
		return p, nil
	}
	payload, err := t.parsePayload(in.Body)
	if err != nil {
		p.discardAll(ReasonTooComplex, err.Error())
		return p, nil
	}
	p.payload = payload
	if stale := t.staleGitHub(p); stale != "" {
		p.discardAll(ReasonBadSignature, stale)
		return p, nil
	}
	var now any = t.nowText() // boxed once for every event
	var headers map[string]any
	for i := range p.events {
		pe := &p.events[i]
		if !pe.tried || pe.reason != "" {
			continue
		}
		ev := pe.ev
		pe.event = map[string]any{"payload": p.payload, "name": ev.name}
		if ev.headers {
			if headers == nil {
				headers = headerMap(in.Headers)
			}
			pe.event["headers"] = headers
		}
		pe.vars = varsPool.Get().(map[string]any)
		pe.vars["event"], pe.vars["now"] = pe.event, now
		if ev.filter != nil {
			pe.match = ev.filter.Prepare(ctx, pe.vars)
		}
		if ev.extract != nil {
			pe.pre = &extraction{}
		}
	}
	return p, nil
}

// discardAll discards p for every event that still takes it, with reason and detail.
func (p *inbound) discardAll(reason, detail string) {
	for i := range p.events {
		if pe := &p.events[i]; pe.tried && pe.reason == "" {
			pe.reason, pe.detail = reason, detail
		}
	}
}

// verify marks the events that take p and checks their signatures on the raw body; it reports whether any event
// still takes the payload.
func (t *Tool) verify(p *inbound) bool {
	in, open := p.in, false
	verdicts := signatureVerdicts{tool: t, in: in, now: p.received}
	for i, ev := range t.events {
		if in.Event != "" && ev.def.Name != in.Event {
			continue
		}
		pe := &p.events[i]
		pe.ev, pe.parent = ev, p
		if !ev.pushed {
			if in.Event == "" {
				continue // a poll event fetches its own payloads
			}
			pe.tried, pe.reason = true, ReasonMisconfigured
			pe.detail = fmt.Sprintf("%s events fetch their own payloads; they cannot be delivered", ev.kind)
			continue
		}
		pe.tried = true
		pe.reason, pe.detail = verdicts.check(ev)
		open = open || pe.reason == ""
	}
	return open
}

func (t *Tool) hasEvent(name string) bool {
	for _, ev := range t.events {
		if ev.def.Name == name {
			return true
		}
	}
	return false
}

// headerMap is event.headers: lower-case names, each with its first value.
func headerMap(h http.Header) map[string]any {
	out := make(map[string]any, len(h))
	for k, v := range h {
		if len(v) > 0 {
			out[strings.ToLower(k)] = v[0]
		}
	}
	return out
}
