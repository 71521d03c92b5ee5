// Package events defines the contract between the tool loader and the receive backends (SPEC §9): webhook,
// subscription and poll, each in its own subpackage, registered by kind the same way action backends are in
// package runtime.
package events

import (
	"context"
	"sort"

	"github.com/commonagents-go/tool/celenv"
	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/internal/decode"
	"github.com/commonagents-go/tool/internal/registry"
	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/runtime"
)

// Receiver is one receive backend, keyed by its receive-block key.
type Receiver interface {
	// Kind is the receive-block key, e.g. "webhook".
	Kind() string
	// Prepare validates and compiles one event's receive block at load. Problems are returned as a field.List.
	Prepare(ctx context.Context, b *Block) (Event, error)
}

// Event is the prepared, immutable form of one receive block.
type Event interface {
	// Common returns the compiled parts every receive type shares: the filter and legacy extractions.
	Common() *Compiled
}

// Pushed is implemented by events whose payloads the platform pushes to the host (webhook, subscription): they
// arrive through Task.Deliver and the Router. Events that fetch their own payloads (poll) do not implement it.
type Pushed interface {
	Event
	// Push returns how pushed payloads are checked.
	Push() Push
}

// Push describes the checks on a pushed payload.
type Push struct {
	// Secret is the {settings.*} template of the signing secret; nil when the manifest names none (the host's
	// fallback secret then applies, if it configured one).
	Secret *interp.Template
}

// Block is one event's receive block, as the loader hands it to Prepare.
type Block struct {
	Kind        string
	Tool, Event string
	// Path is the field path of the block, e.g. events[0].receive.webhook.
	Path *field.Path
	// Value is the block's decoded JSON.
	Value any
	// Check validates templates and CEL against the manifest's declarations.
	Check runtime.Checker
}

// Decode decodes the block into dst strictly.
func (b *Block) Decode(dst any) field.List {
	return decode.Into(b.Value, dst, b.Path)
}

// Common holds the fields every receive block accepts; receivers embed it in their configuration.
type Common struct {
	// Filter is a CEL routing expression over event and the allow list (SPEC §6).
	Filter string `json:"filter,omitempty"`
	// Parameters is the legacy extraction map: name → CEL expression whose value is exposed as event.<name>
	// in the message.
	Parameters map[string]string `json:"parameters,omitempty"`
}

// Compiled is the compiled form of Common.
type Compiled struct {
	Filter *celenv.Program // nil when the block has no filter
	// Extract maps each legacy extraction name to its program; Names lists them sorted.
	Extract map[string]*celenv.Program
	Names   []string
}

// Compile compiles c for the block: the filter in the filter scope and the extractions in extractScope.
func (b *Block) Compile(c Common, extractScope celenv.Scope) (*Compiled, field.List) {
	var errs field.List
	out := &Compiled{Extract: map[string]*celenv.Program{}}
	if c.Filter != "" {
		prog, e := b.Check.CEL(b.Path.Child("filter"), c.Filter, celenv.ScopeFilter)
		errs = append(errs, e...)
		out.Filter = prog
	}
	for name, expr := range c.Parameters {
		p := b.Path.Child("parameters").Key(name)
		if !interpIdent(name) {
			errs.Add(field.Invalid(p, "extraction name must be an identifier"))
			continue
		}
		prog, e := b.Check.CEL(p, expr, extractScope)
		errs = append(errs, e...)
		out.Extract[name] = prog
		out.Names = append(out.Names, name)
	}
	sort.Strings(out.Names)
	return out, errs
}

func interpIdent(s string) bool {
	t, err := interp.Parse("{event." + s + "}")
	if err != nil {
		return false
	}
	r, ok := t.SingleRef()
	return ok && len(r.Steps) == 1 && r.Steps[0].Name == s
}

// Registry maps receive-block keys to receivers. It is safe for concurrent use.
type Registry struct{ set *registry.Set[Receiver] }

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{set: registry.New[Receiver]("events")} }

var defaultRegistry = NewRegistry()

// Default returns the process-wide registry that built-in plugins register into from their init functions.
// Hosts should not register into it after init; clone it instead.
func Default() *Registry { return defaultRegistry }

// Register adds rc. It fails when rc is nil, has no kind, or its kind is already registered.
func (r *Registry) Register(rc Receiver) error { return r.set.Register(rc) }

// MustRegister is Register for init functions: it panics on error.
func (r *Registry) MustRegister(rc Receiver) {
	if err := r.Register(rc); err != nil {
		panic(err)
	}
}

// Lookup returns the plugin registered for kind.
func (r *Registry) Lookup(kind string) (Receiver, bool) { return r.set.Lookup(kind) }

// Kinds returns the registered kinds, sorted.
func (r *Registry) Kinds() []string { return r.set.Kinds() }

// Clone returns an independent copy of r.
func (r *Registry) Clone() *Registry { return &Registry{set: r.set.Clone()} }
