// Package subscription is the subscription receive backend (SPEC §9.3): the task registers a push channel with
// the platform (subscribe), renews it before it expires, and removes it (unsubscribe). Pushes arrive like webhooks.
// This package validates the blocks; running subscriptions arrives with the receivers work. Importing the root
// package registers it.
package subscription

import (
	"context"

	"github.com/commonagents-go/tool/celenv"
	"github.com/commonagents-go/tool/events"
	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/internal/httpspec"
	"github.com/commonagents-go/tool/interp"
)

// Kind is the receive-block key of this receiver.
const Kind = "subscription"

func init() { events.Default().MustRegister(Receiver{}) }

// Request is a subscribe or unsubscribe call; `json` is an accepted alias of `body`.
type Request struct {
	httpspec.Request
	JSON any `json:"json,omitempty"`
}

// Config is a subscription receive block.
type Config struct {
	events.Common
	Subscribe   *Request `json:"subscribe,omitempty"`
	Unsubscribe *Request `json:"unsubscribe,omitempty"`
}

// The interpolation roots of subscribe and unsubscribe (SPEC §4.2).
var (
	SubscribeRoots = []string{interp.RootParameters, interp.RootSettings, interp.RootRuntime, interp.RootAgent,
		interp.RootAuth, interp.RootSubscription}
	UnsubscribeRoots = append(append([]string(nil), SubscribeRoots...), interp.RootSubscribe)
)

// Event is a prepared subscription event.
type Event struct {
	Compiled    *events.Compiled
	Subscribe   *httpspec.Compiled
	Unsubscribe *httpspec.Compiled // nil when the channel is left to expire
}

// Common returns the filter and extractions.
func (e *Event) Common() *events.Compiled { return e.Compiled }

// Push reports that pushes arrive through the webhook path; the manifest names no secret for them.
func (e *Event) Push() events.Push { return events.Push{} }

// Receiver implements events.Receiver for subscriptions.
type Receiver struct{}

// Kind returns "subscription".
func (Receiver) Kind() string { return Kind }

// Prepare compiles the filter, extractions, and the subscribe and unsubscribe requests.
func (Receiver) Prepare(_ context.Context, b *events.Block) (events.Event, error) {
	var cfg Config
	errs := b.Decode(&cfg)
	c, e := b.Compile(cfg.Common, celenv.ScopeExtract)
	errs = append(errs, e...)
	ev := &Event{Compiled: c}
	if cfg.Subscribe == nil {
		errs.Add(field.Required(b.Path.Child("subscribe"), "subscribe is required"))
	} else {
		ev.Subscribe, e = compile(b, "subscribe", cfg.Subscribe, SubscribeRoots)
		errs = append(errs, e...)
	}
	if cfg.Unsubscribe != nil {
		ev.Unsubscribe, e = compile(b, "unsubscribe", cfg.Unsubscribe, UnsubscribeRoots)
		errs = append(errs, e...)
	}
	return ev, errs.Err()
}

func compile(b *events.Block, name string, r *Request, roots []string) (*httpspec.Compiled, field.List) {
	p := b.Path.Child(name)
	var errs field.List
	if r.JSON != nil {
		if r.Body != nil {
			errs.Add(field.Duplicate(p.Child("json"), "body and its alias json are both given; keep one"))
		} else {
			b.Check.Warn(field.Invalid(p.Child("json"), "json is an alias of body"))
			r.Body = r.JSON
		}
	}
	c, e := httpspec.Compile(b.Check, p, r.Request, httpspec.Defaults{}, roots...)
	return c, append(errs, e...)
}

var (
	_ events.Receiver = Receiver{}
	_ events.Pushed   = (*Event)(nil)
)
