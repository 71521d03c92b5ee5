package allowlist

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
)

// stored is one name's entry as persisted: values oldest first, in their JSON types.
type stored struct {
	Sealed bool  `json:"sealed,omitempty"`
	Values []any `json:"values"`
}

// MarshalJSON encodes the list for the task state (SPEC §13) as an object from name to
// {"sealed": bool, "values": [...]}, values oldest first in their JSON types, so UnmarshalJSON restores the
// eviction order, the types and the sealed flags. The cap is not stored: it is the holder's option.
func (l *List) MarshalJSON() ([]byte, error) {
	l.mu.RLock()
	out := make(map[string]stored, len(l.entries))
	for name, e := range l.entries {
		vals := make([]any, len(e.order))
		for i, it := range e.order {
			vals[i] = it.val
		}
		out[name] = stored{Sealed: e.sealed, Values: vals}
	}
	l.mu.RUnlock()
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encode allow list: %w", err)
	}
	return b, nil
}

// UnmarshalJSON replaces the list's contents with what MarshalJSON wrote. Duplicate and null values are
// dropped; an unsealed name holding more values than the cap keeps the newest. On error the list is unchanged.
func (l *List) UnmarshalJSON(data []byte) error {
	in, err := decodeStored(data)
	if err != nil {
		return err
	}
	entries := make(map[string]*entry, len(in))
	for name, s := range in {
		e := newEntry(s.Sealed)
		max := l.limit()
		if s.Sealed {
			max = math.MaxInt // whatever was sealed stays
		}
		for i, v := range s.Values {
			text, val, ok := normalize(v)
			if !ok {
				return fmt.Errorf("decode allow list: value %d of %q is not JSON", i, name)
			}
			if val != nil {
				e.put(text, val, max)
			}
		}
		entries[name] = e
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = entries
	l.version.Add(1)
	return nil
}

// Rebase makes the list the union of data (MarshalJSON's form, written by another holder of the same task: a
// replica, or this process before a restart) and its own values, its own counting as the newer: for each
// unsealed name, the stored values come first, oldest first, then this list's values in their order, so that
// when the union is over the cap it is the stored oldest that go, never a value this list just added. Sealed
// names keep this list's entry; stored sealed entries are ignored. It returns, by name, the values that were new
// here. On a decoding error the list is unchanged.
func (l *List) Rebase(data []byte) (added map[string][]any, err error) {
	in, err := decodeStored(data)
	if err != nil {
		return nil, err
	}
	return l.rebase(in), nil
}

// Restored is what RestoreFrom did.
type Restored struct {
	// Added holds, by name, the values that were new to the list, as Rebase returns them.
	Added map[string][]any
	// Unchanged reports that the list now holds exactly what data holds (the same names, sealed flags and values
	// in order), so that data needs no writing back.
	Unchanged bool
	stored    map[string]stored
}

// Sealed returns the values of the sealed names in data, as SealedValues does.
func (r Restored) Sealed() map[string]any { return sealedOf(r.stored) }

// RestoreFrom is Rebase for a task resumed from data, decoding data once: it also says whether the list is
// unchanged, and gives the stored sealed values.
func (l *List) RestoreFrom(data []byte) (Restored, error) {
	in, err := decodeStored(data)
	if err != nil {
		return Restored{}, err
	}
	added := l.rebase(in)
	l.mu.RLock()
	unchanged := holds(l.entries, in)
	l.mu.RUnlock()
	return Restored{Added: added, Unchanged: unchanged, stored: in}, nil
}

// holds reports whether entries hold exactly in: the same names and sealed flags, each name's values in the same
// order. MarshalJSON's encoding of such entries is in's.
func holds(entries map[string]*entry, in map[string]stored) bool {
	if len(entries) != len(in) {
		return false
	}
	for name, s := range in {
		e := entries[name]
		if e == nil || e.sealed != s.Sealed || len(e.order) != len(s.Values) {
			return false
		}
		for i, v := range s.Values {
			if text, _, ok := normalize(v); !ok || text != e.order[i].text {
				return false
			}
		}
	}
	return true
}

func (l *List) rebase(in map[string]stored) (added map[string][]any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	max := l.limit()
	entries := make(map[string]*entry, len(in)+len(l.entries))
	for _, name := range sortedNames(in) {
		s := in[name]
		if s.Sealed || (l.entries[name] != nil && l.entries[name].sealed) {
			continue
		}
		e := newEntry(false)
		for _, v := range s.Values {
			if text, val, ok := normalize(v); ok && val != nil {
				e.put(text, val, max)
			}
		}
		entries[name] = e
	}
	for name, mine := range l.entries {
		if mine.sealed {
			entries[name] = mine
			continue
		}
		e := entries[name]
		if e == nil {
			entries[name] = mine
			continue
		}
		for _, it := range mine.order {
			if old := e.index[it.text]; old != nil { // refresh: ours is the newer use
				e.remove(old)
			}
			e.put(it.text, it.val, max)
		}
	}
	for name, e := range entries {
		mine := l.entries[name]
		for _, it := range e.order {
			if mine == nil || mine.index[it.text] == nil {
				if added == nil {
					added = map[string][]any{}
				}
				added[name] = append(added[name], it.val)
			}
		}
	}
	l.entries = entries
	l.version.Add(1)
	return added
}

// SealedValues returns the values of the sealed names in data (MarshalJSON's form), each name's first value, or
// nil for a sealed name left empty; numbers are json.Number, as the list holds them.
func SealedValues(data []byte) (map[string]any, error) {
	in, err := decodeStored(data)
	if err != nil {
		return nil, err
	}
	return sealedOf(in), nil
}

func sealedOf(in map[string]stored) map[string]any {
	out := map[string]any{}
	for name, s := range in {
		if !s.Sealed {
			continue
		}
		out[name] = nil
		if len(s.Values) > 0 {
			_, out[name], _ = normalize(s.Values[0])
		}
	}
	return out
}

func sortedNames(in map[string]stored) []string {
	names := make([]string, 0, len(in))
	for name := range in {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
