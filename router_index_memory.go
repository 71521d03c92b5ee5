package tool

import (
	"context"
	"sync"

	"github.com/commonagents-go/tool/allowlist"
)

// The third step of a webhook's path in eager mode: the tasks of one Tool value that a payload's eventRoutes
// cannot rule out, from an index of the tasks held in memory.

// taskIndex finds the tasks of one Tool value that a prepared payload may activate. The Router's is in memory
// (memIndex); a Store-backed index (issue 28's store mode) answers with task IDs for a taskSource to bring into
// memory.
type taskIndex interface {
	// lookup returns the tasks the routes cannot rule out, each once, in no particular order. ctx bounds the
	// lookup.
	lookup(ctx context.Context, routes []eventRoute) ([]taskRef, error)
}

// taskRef is a task an index could not rule out: the task itself when the index holds it, else its ID.
type taskRef struct {
	id   string
	task *Task  // nil when the task is not in memory
	gen  uint64 // the generation of the task's allow list the index holds (store mode)
	// keys are the equality keys of the events the Store's index found the task for: a task whose list lacks one
	// of them cannot match unless its copy is stale (store mode).
	keys []allowlist.Key
}

// memIndex indexes the tasks of one Tool value held in memory by their allow-listed values of the parameters
// that conjuncts compare: parameter → canonical text → tasks. It is safe for concurrent use.
type memIndex struct {
	conj conjuncts

	mu    sync.RWMutex
	tasks map[*Task]map[string]map[string]bool     // what each task put in the index: parameter → texts
	index map[string]map[string]map[*Task]struct{} // parameter → canonical text → tasks
}

func newMemIndex(c conjuncts) *memIndex {
	return &memIndex{conj: c, tasks: map[*Task]map[string]map[string]bool{},
		index: map[string]map[string]map[*Task]struct{}{}}
}

// add indexes t's allow list as it is now.
func (x *memIndex) add(t *Task) {
	x.mu.Lock()
	defer x.mu.Unlock()
	texts := map[string]map[string]bool{}
	x.tasks[t] = texts
	for name, values := range t.allow.Snapshot() {
		for _, text := range values {
			x.put(t, texts, name, text)
		}
	}
}

// remove drops t and reports how many tasks are left.
func (x *memIndex) remove(t *Task) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	for name, texts := range x.tasks[t] {
		for text := range texts {
			x.drop(t, x.tasks[t], name, text)
		}
	}
	delete(x.tasks, t)
	return len(x.tasks)
}

// grown re-indexes the names a call changed. It reads the list as it is now rather than applying the call's
// delta: notifications of concurrent calls may arrive out of order, and a delta applied late could drop a value
// a later call restored.
func (x *memIndex) grown(t *Task, names map[string]bool) {
	now := t.allow.Snapshot()
	x.mu.Lock()
	defer x.mu.Unlock()
	texts := x.tasks[t]
	if texts == nil {
		return
	}
	for name := range names {
		if !x.conj.params[name] {
			continue
		}
		current := map[string]bool{}
		for _, text := range now[name] {
			current[text] = true
			x.put(t, texts, name, text)
		}
		for text := range texts[name] {
			if !current[text] {
				x.drop(t, texts, name, text)
			}
		}
	}
}

func (x *memIndex) put(t *Task, texts map[string]map[string]bool, name, text string) {
	if !x.conj.params[name] || texts[name][text] {
		return
	}
	if texts[name] == nil {
		texts[name] = map[string]bool{}
	}
	texts[name][text] = true
	byText := x.index[name]
	if byText == nil {
		byText = map[string]map[*Task]struct{}{}
		x.index[name] = byText
	}
	if byText[text] == nil {
		byText[text] = map[*Task]struct{}{}
	}
	byText[text][t] = struct{}{}
}

func (x *memIndex) drop(t *Task, texts map[string]map[string]bool, name, text string) {
	delete(texts[name], text)
	set := x.index[name][text]
	delete(set, t)
	if len(set) == 0 {
		delete(x.index[name], text)
	}
}

// lookup returns, for each route, the tasks whose allow list holds the text of its most selective key, or every
// task for a route that no key narrows.
func (x *memIndex) lookup(_ context.Context, routes []eventRoute) ([]taskRef, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var sets []map[*Task]struct{}
	for _, r := range routes {
		if r.all {
			return x.all(), nil
		}
		var best map[*Task]struct{}
		for i, k := range r.keys {
			if set := x.index[k.Param][k.Text]; i == 0 || len(set) < len(best) {
				best = set
			}
		}
		if len(best) > 0 {
			sets = append(sets, best)
		}
	}
	var out []taskRef
	var seen map[*Task]bool // only needed when several events contribute
	if len(sets) > 1 {
		seen = map[*Task]bool{}
	}
	for _, set := range sets {
		for t := range set {
			if seen == nil || !seen[t] {
				out = append(out, taskRef{id: t.id, task: t})
				if seen != nil {
					seen[t] = true
				}
			}
		}
	}
	return out, nil
}

func (x *memIndex) all() []taskRef {
	out := make([]taskRef, 0, len(x.tasks))
	for t := range x.tasks {
		out = append(out, taskRef{id: t.id, task: t})
	}
	return out
}

var _ taskIndex = (*memIndex)(nil)
