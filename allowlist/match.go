package allowlist

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/commonagents-go/tool/celenv"
)

// Reason is the outcome of matching a delivery against a list. Apart from Matched and Capped the values are
// the discard reasons of SPEC §9.1.
type Reason string

// The outcomes of Match.
const (
	Matched        Reason = "matched"          // some assignment made the filter true
	FilterFalse    Reason = "filter_false"     // every assignment tried made it false, or errored with one false or on a missing field only
	EmptyAllowList Reason = "empty_allow_list" // a referenced name has no values; nothing was evaluated
	FilterError    Reason = "filter_error"     // every assignment tried errored
	Capped         Reason = "capped"           // the assignment cap was reached with no match and some false
)

// Outcome is the result of Match.
type Outcome struct {
	Reason Reason
	// Parameters is the assignment that made the filter true (Matched only): one value per referenced name,
	// and for a filter with dynamic references (celenv.Program.DynamicParameterRefs) the newest value of every
	// other name. The values are shared with the list and must not be modified.
	Parameters map[string]any
	// Name is the referenced name whose set is empty (EmptyAllowList only).
	Name string
	// Evaluations is the number of times the whole filter was evaluated.
	Evaluations int
	// Err is the first evaluation error: the cause for FilterError (wrapping ctx's error when ctx ended the
	// search), and informative for FilterFalse and Capped when some assignments errored.
	Err error
}

// assignment is one name whose values Match tries in turn, newest first.
type assignment struct {
	name string
	vals []any
}

// Match reports whether d's event passes its filter with this list (SPEC §6): whether some assignment of listed
// values to the names the filter references makes it true. At most maxAssignments assignments are tried
// (≤ 0: DefaultMaxAssignments).
//
// If a referenced name has no values the outcome is EmptyAllowList, without evaluating. Each equality conjunct
// `A == parameters.X` whose A evaluated is matched by set membership: a text not in X's set gives FilterFalse
// without evaluating, and a present one fixes X to that value. The other referenced names take every
// combination of their values, newest first, the first name varying fastest, until the filter is true. A filter
// referencing no name is evaluated once with empty `parameters`; one with dynamic references sees the newest
// value of every unreferenced name too.
//
// An existential is an OR over assignments, but unlike CEL's `||` an error does not beat a false: one stale value
// of the wrong type must not turn every delivery into a filter_error. So any true gives Matched; else any false
// gives FilterFalse (Capped if assignments were left untried); else FilterError. Evaluations that failed only
// because the payload lacks a field (celenv.ErrMissingField) count as false: a push has no action, and a filter
// testing event.payload.action has not broken on it. Err is then that error, naming the field.
//
// d must come from Filter.Prepare. The list is read under a shared lock, then evaluation runs without it; ctx
// bounds the evaluations.
func (l *List) Match(ctx context.Context, d *Delivery, maxAssignments int) Outcome {
	if maxAssignments <= 0 {
		maxAssignments = DefaultMaxAssignments
	}
	// With one value per referenced name there is one assignment to try: evaluating the conjuncts first would
	// only repeat part of that evaluation.
	if !d.refuted && !l.singleValued(d.filter.refs) {
		d.evalKeys(ctx)
	}
	s := d.filter.getScratch()
	defer d.filter.putScratch(s)
	tries, out, done := l.assign(d, s.params, maxAssignments)
	if done {
		return out
	}
	maps.Copy(s.vars, d.vars)
	s.vars["parameters"] = s.params
	out = d.search(ctx, s, tries, maxAssignments)
	if out.Reason == Matched {
		out.Parameters = maps.Clone(s.params) // s goes back to the pool
	}
	return out
}

// singleValued reports whether each of names holds exactly one value.
func (l *List) singleValued(names []string) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, name := range names {
		if e := l.entries[name]; e == nil || len(e.order) != 1 {
			return false
		}
	}
	return true
}

// assign fills params with the names fixed by conjuncts (and, for dynamic filters, unreferenced names) and
// returns the names left to try, or a final outcome.
func (l *List) assign(d *Delivery, params map[string]any, max int) ([]assignment, Outcome, bool) {
	f := d.filter
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, name := range f.refs {
		if e := l.entries[name]; e == nil || len(e.order) == 0 {
			return nil, Outcome{Reason: EmptyAllowList, Name: name}, true
		}
	}
	if d.refuted {
		return nil, Outcome{Reason: FilterFalse}, true
	}
	var keys []Key
	if d.ready.Load() {
		if d.never {
			return nil, Outcome{Reason: FilterFalse}, true
		}
		keys = d.keys
	}
	for _, k := range keys {
		if k.Err != nil {
			continue
		}
		it := l.entries[k.Param].index[k.Text]
		if it == nil {
			return nil, Outcome{Reason: FilterFalse}, true
		}
		params[k.Param] = it.val
	}
	var tries []assignment
	for _, name := range f.refs {
		if _, fixed := params[name]; fixed {
			continue
		}
		order := l.entries[name].order
		if len(order) == 1 { // one value: fixed too, with nothing to try after it
			params[name] = order[0].val
			continue
		}
		// One more than the cap, so that a cut set can never look exhausted after max assignments.
		vals := make([]any, min(len(order), max+1))
		for i := range vals {
			vals[i] = order[len(order)-1-i].val
		}
		tries = append(tries, assignment{name: name, vals: vals})
	}
	if f.dynamic {
		for name, e := range l.entries {
			if _, ok := params[name]; !ok && len(e.order) > 0 {
				params[name] = e.order[len(e.order)-1].val // a referenced name is overwritten by its tries
			}
		}
	}
	return tries, Outcome{}, false
}

// search evaluates the filter for each combination of tries, at most max times.
func (d *Delivery) search(ctx context.Context, s *scratch, tries []assignment, max int) Outcome {
	params := s.params
	pos := make([]int, len(tries))
	for _, t := range tries {
		params[t.name] = t.vals[0]
	}
	var out Outcome
	falses, broken, exhausted := 0, 0, false
	for out.Evaluations < max {
		if err := ctx.Err(); err != nil {
			return Outcome{Reason: FilterError, Evaluations: out.Evaluations, Err: fmt.Errorf("match filter: %w", err)}
		}
		ok, err := d.filter.prog.EvalBool(ctx, s.vars)
		out.Evaluations++
		switch {
		case err != nil && !errors.Is(err, celenv.ErrMissingField):
			if broken == 0 { // the first real error explains a FilterError better than a missing field
				out.Err = err
			}
			broken++
		case err != nil && out.Err == nil:
			out.Err = err
		case err == nil && ok:
			out.Reason = Matched
			return out
		case err == nil:
			falses++
		}
		if exhausted = !next(pos, tries, params); exhausted {
			break
		}
	}
	switch {
	case falses == 0 && (broken > 0 || ctx.Err() != nil):
		out.Reason = FilterError
		if ctxErr := ctx.Err(); ctxErr != nil {
			out.Err = fmt.Errorf("match filter: %w", ctxErr)
		}
	case falses == 0:
		out.Reason = FilterFalse // every evaluation failed on a missing field
	case !exhausted:
		out.Reason = Capped
	default:
		out.Reason = FilterFalse
	}
	return out
}

// next advances pos like an odometer, first position fastest, and sets the changed names in params. It
// returns false once every combination was visited.
func next(pos []int, tries []assignment, params map[string]any) bool {
	for i, t := range tries {
		pos[i]++
		if pos[i] < len(t.vals) {
			params[t.name] = t.vals[pos[i]]
			return true
		}
		pos[i] = 0
		params[t.name] = t.vals[0]
	}
	return false
}
