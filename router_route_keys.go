package tool

import (
	"context"
	"errors"

	"github.com/commonagents-go/tool/allowlist"
	"github.com/commonagents-go/tool/celenv"
)

// The second step of a webhook's path (after prepare): what a prepared payload tells an index about the tasks
// it may activate. The index in memory (router_index_memory.go) and a Store-backed one read the same eventRoutes.

// conjuncts is what a Tool's filters offer an index: the equality conjuncts `A == parameters.X` at the top of
// their `&&` terms (celenv.Program.EqualityConjuncts), A not reading parameters.
type conjuncts struct {
	// keyed reports, by event index, whether the event's filter has equality conjuncts: only then can an index
	// rule tasks out.
	keyed []bool
	// params are the parameters some conjunct compares: the ones an index holds values of.
	params map[string]bool
}

// conjunctsOf reads t's filters.
func conjunctsOf(t *Tool) conjuncts {
	c := conjuncts{keyed: make([]bool, len(t.events)), params: map[string]bool{}}
	for i, ev := range t.events {
		if ev.filter == nil {
			continue
		}
		for _, conj := range ev.filter.Program().EqualityConjuncts() {
			c.keyed[i] = true
			c.params[conj.Param] = true
		}
	}
	return c
}

// eventRoute is one event a prepared payload may still activate at some task, and how an index finds those
// tasks. An event the payload can activate at no task has no eventRoute.
type eventRoute struct {
	event int // the event's index in the Tool
	// all: no conjunct narrows the event (no filter, no conjunct, or none evaluated): every task may match.
	all bool
	// keys are the conjunct values the payload carries; a task may match only when its allow list holds each
	// key's Text for its Param, so the index takes the tasks of the most selective key.
	keys []allowlist.Key
}

// routes evaluates the conjuncts of the events still in play for p, once for every task (ctx bounds the CEL),
// and returns their eventRoutes.
//
// A key that fails because the payload lacks a field rules the event out: the conjunct is an `&&` term that
// errs whatever the assignment, so no assignment makes the filter true, and allowlist.Match counts a missing
// field as false. (Delivering to every task says filter_false for it, or filter_error when another term fails
// for real first; either way nothing activates.) A null key rules the event out too: no allow list holds null.
// A key that fails otherwise narrows nothing: the tasks report the error.
func (c conjuncts) routes(ctx context.Context, p *inbound) []eventRoute {
	var out []eventRoute
	for i := range p.events {
		pe := &p.events[i]
		if !pe.tried || pe.reason != "" { // decided for every task: toolWide reports it
			continue
		}
		if pe.match != nil && pe.match.Refuted() { // false whatever the task: it activates none
			continue
		}
		if pe.match == nil || !c.keyed[i] {
			out = append(out, eventRoute{event: i, all: true})
			continue
		}
		route, ok := keyRoute(pe.match.Keys(ctx))
		if ok {
			route.event = i
			out = append(out, route)
		}
	}
	return out
}

// keyRoute is the route of an event with conjunct keys; false when a key rules every task out.
func keyRoute(keys []allowlist.Key) (eventRoute, bool) {
	usable := keys[:0]
	for _, k := range keys {
		switch {
		case errors.Is(k.Err, celenv.ErrMissingField), k.Err == nil && k.Null:
			return eventRoute{}, false
		case k.Err == nil:
			usable = append(usable, k)
		}
	}
	if len(usable) == 0 {
		return eventRoute{all: true}, true
	}
	return eventRoute{keys: usable}, true
}
