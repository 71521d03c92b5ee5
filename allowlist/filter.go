package allowlist

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commonagents-go/tool/celenv"
)

// Filter is a receive filter prepared for matching against allow lists: its referenced parameters and equality
// conjuncts are read once from the program. It is safe for concurrent use and must not be copied.
type Filter struct {
	prog    *celenv.Program
	refs    []string // sorted
	dynamic bool
	conj    []celenv.Conjunct
	scratch sync.Pool // of *scratch: Match's maps, reused across deliveries
}

// scratch holds the variables of one Match: a copy of the delivery's plus `parameters`.
type scratch struct {
	vars, params map[string]any
}

func (f *Filter) getScratch() *scratch {
	if s, ok := f.scratch.Get().(*scratch); ok {
		return s
	}
	return &scratch{vars: make(map[string]any, 4), params: make(map[string]any, len(f.refs))}
}

func (f *Filter) putScratch(s *scratch) {
	clear(s.vars)
	clear(s.params)
	f.scratch.Put(s)
}

// NewFilter prepares p, a program yielding a bool (a ScopeFilter program), for matching. Build it once, at
// load. p must not be nil.
func NewFilter(p *celenv.Program) *Filter {
	return &Filter{prog: p, refs: p.ParameterRefs(), dynamic: p.DynamicParameterRefs(), conj: p.EqualityConjuncts()}
}

// Program returns the filter's program.
func (f *Filter) Program() *celenv.Program { return f.prog }

// Key is the value one equality conjunct `A == parameters.Param` of a filter requires for one delivery: only a
// list holding Text for Param can match. A router indexes tasks by (Param, Text) (SPEC §9.6).
type Key struct {
	// Param is the parameter name.
	Param string
	// Text is the canonical text of A's value; meaningful when Err is nil and Null is false.
	Text string
	// Null reports that A was null: no list can match.
	Null bool
	// Err is why evaluating A failed; the conjunct then narrows nothing and Match tries the values instead.
	Err error
}

// Delivery is one inbound event prepared for a Filter: the variables, and the conjunct keys, evaluated once on
// first need and shared by every list it is matched against, concurrently if wanted.
type Delivery struct {
	filter *Filter
	vars   map[string]any
	once   sync.Once
	ready  atomic.Bool // keys and never are set: readable without once
	keys   []Key
	never  bool // a conjunct was null, or two conjuncts on one name want different texts
	// refuted: the filter is false for vars whatever the parameters (celenv.Program.FalseFor), known at Prepare.
	refuted bool
}

// Prepare prepares vars (`event`, and `now`; when `now` is absent it is set to the current time, so that
// conjuncts and filter see the same one) for matching. vars is not modified and must not be modified while the
// Delivery is in use. The equality conjuncts are evaluated by the first Keys or Match that needs them, bounded
// by that call's ctx: a Match against a list whose referenced names each hold one value does not need them.
func (f *Filter) Prepare(_ context.Context, vars map[string]any) *Delivery {
	base := vars
	if _, ok := vars["now"]; !ok {
		base = make(map[string]any, len(vars)+1)
		maps.Copy(base, vars)
		base["now"] = time.Now().UTC().Format(time.RFC3339)
	}
	return &Delivery{filter: f, vars: base, refuted: f.prog.FalseFor(base)}
}

// Refuted reports that the filter is false for this delivery whatever the parameters, as a test of the payload
// it opens with (celenv.Program.FalseFor) shows: Match then says FilterFalse without evaluating it, once the
// list holds a value of each name the filter reads (else EmptyAllowList, as always), and a router need not look
// for tasks.
func (d *Delivery) Refuted() bool { return d.refuted }

// evalKeys evaluates the conjuncts once.
func (d *Delivery) evalKeys(ctx context.Context) {
	d.once.Do(func() {
		defer d.ready.Store(true)
		f := d.filter
		if len(f.conj) == 0 {
			return
		}
		d.keys = make([]Key, len(f.conj))
		for i, c := range f.conj {
			k := Key{Param: c.Param}
			switch v, err := c.Value.Eval(ctx, d.vars); {
			case err != nil:
				k.Err = err
			case v == nil:
				k.Null = true
				d.never = true
			default:
				k.Text = Canonical(v)
				for _, prev := range d.keys[:i] {
					if prev.Param == k.Param && prev.Err == nil && !prev.Null && prev.Text != k.Text {
						d.never = true // `A == parameters.X && B == parameters.X` with A ≠ B
					}
				}
			}
			d.keys[i] = k
		}
	})
}

// Keys returns the conjunct keys in the filter's source order, evaluating them if no call did yet (ctx bounds
// that). The result is fresh.
func (d *Delivery) Keys(ctx context.Context) []Key {
	d.evalKeys(ctx)
	return slices.Clone(d.keys)
}
