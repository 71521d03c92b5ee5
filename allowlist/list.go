package allowlist

import (
	"cmp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
)

// Defaults of SPEC §14.
const (
	// DefaultMaxPerName is the number of values a name keeps before the oldest is evicted.
	DefaultMaxPerName = 1024
	// DefaultMaxAssignments is the number of assignments Match tries per delivery.
	DefaultMaxAssignments = 4096
)

// List is one task's allow list: for each parameter name an ordered set of values, de-duplicated by Canonical
// text, and a sealed flag (SPEC §6). Each value keeps its JSON type; numbers are held as json.Number in
// canonical form.
//
// A name holds at most its cap of values; adding a new value to a full name evicts the oldest. Re-adding a
// present value changes nothing unless more than half the cap of newer values have been added since it was
// last added: then it moves to the newest position, so a value still in use is not evicted.
//
// The zero value is an empty List with the default cap. A List is safe for concurrent use; reads (Match,
// AddAll when nothing changes) take a shared lock only.
type List struct {
	mu      sync.RWMutex
	max     int
	entries map[string]*entry
	version atomic.Uint64
}

type entry struct {
	sealed bool
	clock  uint64           // stamp given to the latest insertion or refresh
	index  map[string]*item // by canonical text
	order  []*item          // oldest first, so stamps increase
}

type item struct {
	text  string
	val   any
	stamp uint64
}

// New returns an empty List keeping at most maxPerName values per name (≤ 0: DefaultMaxPerName).
func New(maxPerName int) *List {
	if maxPerName <= 0 {
		maxPerName = DefaultMaxPerName
	}
	return &List{max: maxPerName, entries: make(map[string]*entry)}
}

func (l *List) limit() int {
	if l.max <= 0 {
		return DefaultMaxPerName
	}
	return l.max
}

// Seal replaces name's entry with one holding exactly v and seals it: later adds to name are no-ops. A nil v
// (or one that is not JSON) leaves the sealed entry empty, so filters referencing name never match.
func (l *List) Seal(name string, v any) {
	e := newEntry(true)
	if text, val, ok := normalize(v); ok && val != nil {
		e.put(text, val, 1)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.entries == nil {
		l.entries = make(map[string]*entry)
	}
	l.entries[name] = e
	l.version.Add(1)
}

// Add adds v to name's values unless name is sealed or v is nil or not JSON. It reports whether v was new and
// the canonical texts it evicted.
func (l *List) Add(name string, v any) (added bool, evicted []string) {
	l.mu.RLock()
	may := l.mayChange(name, v)
	l.mu.RUnlock()
	if !may {
		return false, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	added, _, evicted = l.add(name, v)
	return added, evicted
}

// AddAll adds each value of args to the entry of its key, as Add does: the per-call path (SPEC §6). It reports
// whether the list changed and, for each name that lost values, the evicted canonical texts. When nothing
// changes (values of scalar types already present), it takes only a shared lock and does not allocate.
func (l *List) AddAll(args map[string]any) (changed bool, evicted map[string][]string) {
	l.mu.RLock()
	may := false
	for name, v := range args {
		if may = l.mayChange(name, v); may {
			break
		}
	}
	l.mu.RUnlock()
	if !may {
		return false, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, v := range args {
		_, ch, ev := l.add(name, v)
		changed = changed || ch
		if len(ev) > 0 {
			if evicted == nil {
				evicted = make(map[string][]string)
			}
			evicted[name] = append(evicted[name], ev...)
		}
	}
	return changed, evicted
}

// mayChange reports whether adding v to name may change the list. l.mu must be held.
func (l *List) mayChange(name string, v any) bool {
	if v == nil {
		return false
	}
	e := l.entries[name]
	if e == nil {
		return true
	}
	if e.sealed {
		return false
	}
	it, ok := e.find(v)
	return ok && (it == nil || e.aged(it, l.limit()))
}

// add adds v to name; l.mu must be held for writing.
func (l *List) add(name string, v any) (added, changed bool, evicted []string) {
	if v == nil {
		return false, false, nil
	}
	e := l.entries[name]
	if e != nil && e.sealed {
		return false, false, nil
	}
	text, val, ok := normalize(v)
	if !ok || val == nil {
		return false, false, nil
	}
	if e == nil {
		if l.entries == nil {
			l.entries = make(map[string]*entry)
		}
		e = newEntry(false)
		l.entries[name] = e
	}
	added, changed, evicted = e.put(text, val, l.limit())
	if changed {
		l.version.Add(1)
	}
	return added, changed, evicted
}

// Sealed reports whether name's entry is sealed.
func (l *List) Sealed(name string) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	e := l.entries[name]
	return e != nil && e.sealed
}

// Len returns the number of values name holds.
func (l *List) Len(name string) int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if e := l.entries[name]; e != nil {
		return len(e.order)
	}
	return 0
}

// Version returns a number that grows with every change to the list (a new, evicted or refreshed value, a
// seal, a decode), so a holder can tell when to persist it or re-index it.
func (l *List) Version() uint64 { return l.version.Load() }

// Snapshot returns each name's canonical texts, sorted; a sealed name left empty maps to an empty slice. The
// result is fresh.
func (l *List) Snapshot() map[string][]string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make(map[string][]string, len(l.entries))
	for name, e := range l.entries {
		texts := make([]string, len(e.order))
		for i, it := range e.order {
			texts[i] = it.text
		}
		slices.Sort(texts)
		out[name] = texts
	}
	return out
}

func newEntry(sealed bool) *entry {
	return &entry{sealed: sealed, index: make(map[string]*item)}
}

// find returns the item whose text is v's canonical text (nil if absent) and whether v is a JSON value. Strings,
// bools and numbers up to int64 do not allocate.
func (e *entry) find(v any) (*item, bool) {
	switch v := v.(type) {
	case string:
		return e.index[v], true
	case bool:
		return e.index[strconv.FormatBool(v)], true
	}
	var buf [32]byte
	if b, isNum, ok := appendNumber(buf[:0], v); isNum {
		if !ok {
			return nil, false
		}
		return e.index[string(b)], true
	}
	text, _, ok := normalize(v)
	if !ok {
		return nil, false
	}
	return e.index[text], true
}

// aged reports whether more than half of max newer values were added after it.
func (e *entry) aged(it *item, max int) bool {
	return e.clock-it.stamp > uint64(max/2)
}

// remove drops it from the entry.
func (e *entry) remove(it *item) {
	i, _ := slices.BinarySearchFunc(e.order, it.stamp, func(x *item, s uint64) int { return cmp.Compare(x.stamp, s) })
	e.order = slices.Delete(e.order, i, i+1)
	delete(e.index, it.text)
}

// put adds or refreshes a value, evicting the oldest past max.
func (e *entry) put(text string, val any, max int) (added, changed bool, evicted []string) {
	if it := e.index[text]; it != nil {
		if !e.aged(it, max) {
			return false, false, nil
		}
		i, _ := slices.BinarySearchFunc(e.order, it.stamp, func(x *item, s uint64) int { return cmp.Compare(x.stamp, s) })
		e.order = slices.Delete(e.order, i, i+1)
		e.clock++
		it.stamp = e.clock
		e.order = append(e.order, it)
		return false, true, nil
	}
	for len(e.order) >= max {
		evicted = append(evicted, e.order[0].text)
		delete(e.index, e.order[0].text)
		e.order = slices.Delete(e.order, 0, 1)
	}
	e.clock++
	it := &item{text: text, val: val, stamp: e.clock}
	e.index[text] = it
	e.order = append(e.order, it)
	return true, true, evicted
}

// Absent returns, by name, the canonical text of each value of args that AddAll would add as a new value: a
// value the name does not hold, of a name that is not sealed. Values of other names and non-JSON values are
// left out. It takes only a shared lock; nil when there are none.
func (l *List) Absent(args map[string]any) map[string]string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out map[string]string
	for name, v := range args {
		if v == nil {
			continue
		}
		e := l.entries[name]
		if e != nil && e.sealed {
			continue
		}
		if e != nil {
			if it, ok := e.find(v); !ok || it != nil {
				continue
			}
		}
		text, val, ok := normalize(v)
		if !ok || val == nil {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[name] = text
	}
	return out
}

// Holds reports whether name holds the value whose canonical text is text.
func (l *List) Holds(name, text string) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	e := l.entries[name]
	return e != nil && e.index[text] != nil
}
