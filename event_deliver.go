package tool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/commonagents-go/tool/allowlist"
	"github.com/commonagents-go/tool/celenv"
	"github.com/commonagents-go/tool/events/poll"
	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/interp"
)

// Deliver runs the activation pipeline of SPEC §9.1 for one pushed payload: for each of the tool's pushed
// events (or only in.Event) the signature is checked over the raw body, the event must be included, not
// expired and the task not interrupted, and the filter must pass with the allow list (SPEC §6); then the legacy
// extractions and the message are evaluated, the delivery id must not be already activated (it is claimed only
// now, for an event that activates), and the Activation is handed to the task's Sink.
//
// The Delivery lists the accepted activations and every discard with its reason. An activation the Sink
// refuses is left out of it and Deliver returns an error wrapping ErrNotAccepted with the Delivery; its delivery
// id is released, so a retry of the same payload activates it again, also at another replica. A delivery id
// that an earlier attempt still holds (its Sink has not accepted yet, here or at a replica sharing the Store) is
// discarded as ReasonInFlight, which the Router answers 503 so that the sender retries. An event whose filter or
// extractions could not run because ctx ended is neither activated nor discarded: the error wraps
// ErrNotAccepted and ctx's error, so that the sender retries too. Deliver returns ErrPayloadTooLarge for a body
// over Limits.InboundBytes, ErrUnknownEvent for an in.Event the tool does not have, and ErrClosed once the task
// is closed. ctx bounds the filter evaluations and the Sink.
//
// Signatures are checked on the raw body before it is parsed; a body no event takes is never parsed, and a JSON
// body over Limits.InboundDepth or Limits.InboundValues is discarded unparsed as payload_too_complex.
func (t *Task) Deliver(ctx context.Context, in *Inbound) (*Delivery, error) {
	p, err := t.tool.prepare(ctx, in)
	if err != nil {
		return nil, err
	}
	defer p.release()
	return t.deliver(ctx, p)
}

// activationID is the stable id of the activation of event for p (Activation.ID): a hash of the task, the event
// and what identifies the payload — the delivery id, else a polled item's fingerprint, else the body's bytes —
// so that every retry of a delivery, and every re-fire of a polled item, carries the same id.
func (t *Task) activationID(event string, p *inbound) string {
	h := sha256.New()
	head := make([]byte, 0, len(t.id)+len(event)+len(p.deliveryID)+len(p.item)+len("\x00\x00delivery\x00"))
	head = append(append(append(append(head, t.id...), 0), event...), 0)
	switch {
	case p.deliveryID != "":
		head = append(append(head, "delivery\x00"...), p.deliveryID...)
	case p.item != "":
		head = append(append(head, "item\x00"...), p.item...)
	default:
		head = append(head, "body\x00"...)
	}
	h.Write(head)
	if p.deliveryID == "" && p.item == "" && p.in != nil {
		h.Write(p.in.Body)
	}
	var sum [sha256.Size]byte
	id := [len("act_") + 32]byte{'a', 'c', 't', '_'}
	hex.Encode(id[len("act_"):], h.Sum(sum[:0])[:16])
	return string(id[:])
}

// deliver runs the task's part of the pipeline for a prepared inbound.
func (t *Task) deliver(ctx context.Context, p *inbound) (*Delivery, error) {
	if err := t.enter(); err != nil {
		return nil, err
	}
	defer t.leave()
	d := &Delivery{TaskID: t.id}
	var refused []error
	for i := range p.events {
		pe := &p.events[i]
		if !pe.tried {
			continue
		}
		if err := t.handle(ctx, d, i, pe); err != nil {
			refused = append(refused, err)
		}
	}
	if len(refused) > 0 {
		return d, t.secrets.Error(fmt.Errorf("tool: deliver to task %s: %w", t.id,
			errors.Join(append([]error{ErrNotAccepted}, refused...)...)))
	}
	return d, nil
}

// handle routes a payload prepared for event i and hands the activation to the Sink, recording the outcome in d.
// It returns an error when the Sink refused the activation, or when ctx ended before the event's outcome was
// decided (an outcome that needed no evaluation, such as excluded, stands).
func (t *Task) handle(ctx context.Context, d *Delivery, i int, pe *pushedEvent) error {
	a, discard, key := t.route(ctx, i, pe)
	if a == nil && discard.Reason == "" {
		return fmt.Errorf("event %s: not handled: %w", discard.Event, context.Cause(ctx))
	}
	if a == nil {
		d.Discarded = append(d.Discarded, discard)
		if t.observing() {
			t.observe(ctx, facts.EventDiscarded, "", map[string]any{"event": discard.Event, "reason": discard.Reason,
				"detail": discard.Detail, "delivery_id": pe.parent.deliveryID})
		}
		return nil
	}
	if err := t.activate(ctx, a, key); err != nil {
		return err
	}
	d.Activations = append(d.Activations, *a)
	return nil
}

// route decides whether event i activates the task: the Activation, or the Discard saying why not; a Discard
// without a Reason when ctx ended before it could decide. The filter runs before the delivery id is claimed, so
// that a task claims only the events it activates: an event whose filter is false costs the Store nothing, and
// its claim can neither hold the sender's retries off nor run out the request's time. A payload with a delivery
// id activates holding the id's claim, whose key (dedupeKey) it returns for activate.
func (t *Task) route(ctx context.Context, i int, pe *pushedEvent) (_ *Activation, _ Discard, key string) {
	name := pe.ev.def.Name
	discard := func(reason, detail string) (*Activation, Discard, string) {
		return nil, Discard{Event: name, Reason: reason, Detail: detail}, ""
	}
	if reason, detail := t.events.admit(i); reason != "" {
		return discard(reason, detail)
	}
	if pe.reason != "" {
		return discard(pe.reason, pe.detail)
	}
	activation, d := t.evaluate(ctx, pe)
	if activation == nil {
		if ctx.Err() != nil && (d.Reason == ReasonFilterError || d.Reason == ReasonFilterFalse) {
			// The filter or an extraction ran with an ended context: its verdict is not the payload's. No
			// outcome, so that the sender is told to retry. (empty_allow_list and misconfigured need no
			// evaluation.)
			d = Discard{Event: name}
		}
		return nil, d, ""
	}
	p := pe.parent
	if p.deliveryID == "" {
		return activation, Discard{}, ""
	}
	key = t.events.dedupeKey(name, p.deliveryID)
	switch t.events.claim(ctx, key) {
	case claimDuplicate:
		return discard(ReasonDuplicate, "delivery "+p.deliveryID+" was already activated")
	case claimInFlight:
		return discard(ReasonInFlight, "delivery "+p.deliveryID+" is being activated and its Sink has not accepted yet; retry later")
	}
	return activation, Discard{}, key
}

// evaluate runs the filter, the extractions and the message of a payload the event takes.
func (t *Task) evaluate(ctx context.Context, pe *pushedEvent) (*Activation, Discard) {
	name, p := pe.ev.def.Name, pe.parent
	discard := func(reason, detail string) (*Activation, Discard) {
		return nil, Discard{Event: name, Reason: reason, Detail: detail}
	}
	params, reason, detail := t.match(ctx, pe)
	if reason != "" {
		return discard(reason, detail)
	}
	extracted, err := pe.extracted(ctx)
	if err != nil {
		return discard(ReasonFilterError, t.secrets.String(err.Error()))
	}
	msg, err := pe.ev.message.RenderString(&messageValues{tool: t.tool, event: pe.event, extracted: extracted, params: params})
	if err != nil {
		return discard(ReasonMisconfigured, "message: "+t.secrets.String(err.Error()))
	}
	msg = strings.TrimSpace(msg) // a YAML block scalar ends with a newline nobody means
	return &Activation{ID: t.activationID(name, p), TaskID: t.id, Tool: t.tool.Name(), Event: name, Message: msg, DeliveryID: p.deliveryID,
		Payload: p.payload, Parameters: params, ReceivedAt: p.received}, Discard{}
}

// match evaluates the event's filter over the allow list; it returns the activation's parameters (the bindings
// and the matching assignment) or a discard reason.
func (t *Task) match(ctx context.Context, pe *pushedEvent) (params map[string]any, reason, detail string) {
	if pe.match != nil {
		out := t.allow.Match(ctx, pe.match, t.tool.opts.limits.FilterAssignments)
		if out.Reason != allowlist.Matched {
			reason, detail = t.unmatched(out)
			return nil, reason, detail
		}
		// out.Parameters is a fresh map of the matching assignment: the bindings fill in what it lacks, so that
		// a match costs no second map (an event that does not match costs none).
		params = out.Parameters
		for name, v := range t.bindings {
			if _, ok := params[name]; !ok {
				params[name] = v
			}
		}
	} else {
		params = make(map[string]any, len(t.bindings))
		maps.Copy(params, t.bindings)
	}
	for name := range t.tool.secretParams { // the Activation goes to the Sink and on to the LLM (SPEC §12.2)
		delete(params, name)
	}
	return params, "", ""
}

// unmatched is the discard reason and detail of a failed match.
func (t *Task) unmatched(out allowlist.Outcome) (reason, detail string) {
	switch out.Reason {
	case allowlist.EmptyAllowList:
		return ReasonEmptyAllowList, fmt.Sprintf("no value of parameter %q is allow-listed yet", out.Name)
	case allowlist.Capped:
		return ReasonFilterFalse, fmt.Sprintf("no match in the first %d assignments (Limits.FilterAssignments)", out.Evaluations)
	case allowlist.FilterError:
		return ReasonFilterError, t.secrets.String(out.Err.Error())
	}
	if errors.Is(out.Err, celenv.ErrMissingField) { // a payload without the field, not a broken filter
		return ReasonFilterFalse, "the payload lacks a field the filter reads: " + t.secrets.String(out.Err.Error())
	}
	return ReasonFilterFalse, ""
}

// extracted evaluates the legacy extractions, once per inbound: they read only the payload.
func (pe *pushedEvent) extracted(ctx context.Context) (map[string]any, error) {
	x := pe.pre
	if x == nil {
		return nil, nil
	}
	x.once.Do(func() {
		c := pe.ev.extract
		values := make(map[string]any, len(c.Names))
		vars := map[string]any{"event": pe.event}
		if pe.ev.kind == poll.Kind {
			vars["item"] = pe.parent.payload
		}
		for _, name := range c.Names {
			v, err := c.Extract[name].Eval(ctx, vars)
			if err != nil {
				x.err = fmt.Errorf("extraction %s: %w", name, err)
				return
			}
			values[name] = v
		}
		x.values = values
	})
	return x.values, x.err
}

// activate hands a to the Sink; once it is accepted the delivery id (claimed under key, "" when a has none) is
// recorded and the task's activity reset.
func (t *Task) activate(ctx context.Context, a *Activation, key string) error {
	if key != "" {
		defer t.events.release(key) // after remember: a concurrent retry is a duplicate throughout
	}
	if sink := t.cfg.Sink; sink != nil {
		if err := sink.Accept(ctx, *a); err != nil {
			if key != "" {
				t.events.unclaim(ctx, key)
			}
			if t.observing() {
				t.observe(ctx, facts.EventRefused, "", map[string]any{"event": a.Event, "delivery_id": a.DeliveryID,
					"error": err.Error()})
			}
			return fmt.Errorf("event %s: %w", a.Event, err)
		}
	}
	write := t.events.noteActivity(t.tool.opts.clock.Now())
	switch {
	case key != "":
		t.events.remember(ctx, key, write) // the activity, when due, in the record's Store call
	case write:
		_ = t.events.save(t.events.ctx)
	}
	if t.observing() {
		t.observe(ctx, facts.EventActivated, "", map[string]any{"event": a.Event, "delivery_id": a.DeliveryID})
	}
	return nil
}

// messageValues resolves the roots of an event message (SPEC §4.2): event.payload, event.name, event.headers
// and legacy extractions; parameters; settings (non-secret, checked at load).
type messageValues struct {
	tool      *Tool
	event     map[string]any
	extracted map[string]any
	params    map[string]any
}

func (v *messageValues) Resolve(ref interp.Ref) (any, error) {
	switch ref.Root {
	case interp.RootEvent:
		if len(ref.Steps) > 0 && !ref.Steps[0].IsIndex {
			if x, ok := v.extracted[ref.Steps[0].Name]; ok {
				rest, _ := interp.Lookup(x, ref.Steps[1:])
				return rest, nil
			}
		}
		return lookup(v.event, ref.Steps), nil
	case interp.RootParameters:
		return lookup(v.params, ref.Steps), nil
	case interp.RootSettings:
		return v.tool.setting(ref)
	}
	return nil, fmt.Errorf("%s values are not available in a message", ref.Root)
}
