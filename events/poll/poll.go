// Package poll is the poll receive backend (SPEC §9.4): the task fetches an endpoint every interval and a CEL
// detect expression picks the new items, each becoming one activation. This package validates the blocks;
// polling arrives with the receivers work. Importing the root package registers it.
package poll

import (
	"context"
	"time"

	"github.com/commonagents-go/tool/celenv"
	"github.com/commonagents-go/tool/events"
	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/internal/httpspec"
	"github.com/commonagents-go/tool/interp"
)

// Kind is the receive-block key of this receiver.
const Kind = "poll"

func init() { events.Default().MustRegister(Receiver{}) }

// Config is a poll receive block.
type Config struct {
	events.Common
	httpspec.Request
	// Detect is a CEL expression returning the list of new items in the response.
	Detect string `json:"detect"`
	// Interval between fetches (extension; default: the host's poll interval).
	Interval string `json:"interval,omitempty"`
}

// Roots are the interpolation roots of the poll request (SPEC §4.2).
var Roots = []string{interp.RootParameters, interp.RootSettings, interp.RootRuntime, interp.RootAgent,
	interp.RootAuth, interp.RootPoll}

// Event is a prepared poll event.
type Event struct {
	Compiled *events.Compiled
	Request  *httpspec.Compiled
	Detect   *celenv.Program
	Interval time.Duration // 0 = the host default
}

// Common returns the filter and extractions.
func (e *Event) Common() *events.Compiled { return e.Compiled }

// Receiver implements events.Receiver for polls.
type Receiver struct{}

// Kind returns "poll".
func (Receiver) Kind() string { return Kind }

// Prepare compiles the filter, extractions, request, detect and interval.
func (Receiver) Prepare(_ context.Context, b *events.Block) (events.Event, error) {
	var cfg Config
	errs := b.Decode(&cfg)
	c, e := b.Compile(cfg.Common, celenv.ScopePollExtract)
	errs = append(errs, e...)
	ev := &Event{Compiled: c}
	if cfg.Method == "" {
		cfg.Method = "GET"
	}
	ev.Request, e = httpspec.Compile(b.Check, b.Path, cfg.Request, httpspec.Defaults{}, Roots...)
	errs = append(errs, e...)
	if cfg.Detect == "" {
		errs.Add(field.Required(b.Path.Child("detect"), "detect is required: a CEL expression returning the new items"))
	} else {
		ev.Detect, e = b.Check.CEL(b.Path.Child("detect"), cfg.Detect, celenv.ScopeDetect)
		errs = append(errs, e...)
	}
	d, de := httpspec.Duration(b.Path.Child("interval"), cfg.Interval)
	errs.Add(de)
	ev.Interval = d
	return ev, errs.Err()
}

var (
	_ events.Receiver = Receiver{}
	_ events.Event    = (*Event)(nil)
)
