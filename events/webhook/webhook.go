// Package webhook is the webhook receive backend (SPEC §9.1–9.2): the platform POSTs events to the host's endpoint;
// nothing is registered or renewed. Importing the root package registers it.
//
// Verify checks a delivery's signature (GitHub, Standard Webhooks or a host's scheme, chosen by the headers present)
// in constant time (the pipeline runs it before any filter, §9.1); DeliveryID gives the sender's id for replay
// deduplication.
package webhook

import (
	"context"

	"github.com/commonagents-go/tool/celenv"
	"github.com/commonagents-go/tool/events"
	"github.com/commonagents-go/tool/interp"
)

// Kind is the receive-block key of this receiver.
const Kind = "webhook"

func init() { events.Default().MustRegister(Receiver{}) }

// Config is a webhook receive block.
type Config struct {
	events.Common
	// Secret is a {settings.*} template resolving to the HMAC secret the signature is checked with.
	Secret string `json:"secret,omitempty"`
}

// Event is a prepared webhook event.
type Event struct {
	Compiled *events.Compiled
	Secret   *interp.Template // nil when the event is not signed (the host's fallback secret may apply)
}

// Common returns the filter and extractions.
func (e *Event) Common() *events.Compiled { return e.Compiled }

// Receiver implements events.Receiver for webhooks.
type Receiver struct{}

// Kind returns "webhook".
func (Receiver) Kind() string { return Kind }

// Prepare compiles the filter, the extractions and the secret template.
func (Receiver) Prepare(_ context.Context, b *events.Block) (events.Event, error) {
	var cfg Config
	errs := b.Decode(&cfg)
	c, e := b.Compile(cfg.Common, celenv.ScopeExtract)
	errs = append(errs, e...)
	ev := &Event{Compiled: c}
	if cfg.Secret != "" {
		t, e := b.Check.Template(b.Path.Child("secret"), cfg.Secret, interp.RootSettings)
		errs = append(errs, e...)
		ev.Secret = t
	}
	return ev, errs.Err()
}

var (
	_ events.Receiver = Receiver{}
	_ events.Event    = (*Event)(nil)
)
