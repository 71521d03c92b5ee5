package allowlist

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"
)

func TestAdd(t *testing.T) {
	t.Parallel()
	type add struct {
		name        string
		v           any
		wantAdded   bool
		wantEvicted []string
	}
	tests := []struct {
		name     string
		max      int
		seal     map[string]any
		adds     []add
		wantSnap map[string][]string
	}{
		{
			name: "numbers de-duplicated by canonical text",
			adds: []add{
				{"n", 42, true, nil},
				{"n", 42.0, false, nil},
				{"n", json.Number("42"), false, nil},
				{"n", int64(42), false, nil},
				{"n", json.Number("42.5"), true, nil},
			},
			wantSnap: map[string][]string{"n": {"42", "42.5"}},
		},
		{
			name: "objects de-duplicated regardless of key order",
			adds: []add{
				{"o", map[string]any{"a": 1, "b": "x"}, true, nil},
				{"o", map[string]any{"b": "x", "a": 1.0}, false, nil},
			},
			wantSnap: map[string][]string{"o": {`{"a":1,"b":"x"}`}},
		},
		{
			name: "nil and non-JSON values skipped",
			adds: []add{
				{"x", nil, false, nil},
				{"x", math.NaN(), false, nil},
				{"y", "a", true, nil},
			},
			wantSnap: map[string][]string{"y": {"a"}},
		},
		{
			name: "sealed entries never grow",
			seal: map[string]any{"repo": "octo/tool"},
			adds: []add{
				{"repo", "octo/other", false, nil},
				{"repo", "octo/tool", false, nil},
			},
			wantSnap: map[string][]string{"repo": {"octo/tool"}},
		},
		{
			name:     "sealed to null stays empty",
			seal:     map[string]any{"repo": nil},
			adds:     []add{{"repo", "octo/tool", false, nil}},
			wantSnap: map[string][]string{"repo": {}},
		},
		{
			name: "oldest evicted past the cap",
			max:  3,
			adds: []add{
				{"a", "1", true, nil},
				{"a", "2", true, nil},
				{"a", "3", true, nil},
				{"a", "4", true, []string{"1"}},
				{"a", "4", false, nil}, // newest: no refresh
				{"a", "5", true, []string{"2"}},
			},
			wantSnap: map[string][]string{"a": {"3", "4", "5"}},
		},
		{
			name: "value re-added after half the cap moves to newest",
			max:  4,
			adds: []add{
				{"a", "1", true, nil},
				{"a", "2", true, nil},
				{"a", "3", true, nil},
				{"a", "4", true, nil},
				{"a", "1", false, nil}, // three newer values > 4/2: refreshed
				{"a", "5", true, []string{"2"}},
			},
			wantSnap: map[string][]string{"a": {"1", "3", "4", "5"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := New(tt.max)
			for name, v := range tt.seal {
				l.Seal(name, v)
			}
			for i, a := range tt.adds {
				added, evicted := l.Add(a.name, a.v)
				if added != a.wantAdded || !slices.Equal(evicted, a.wantEvicted) {
					t.Errorf("add %d: Add(%q, %#v) = %v, %q; want %v, %q", i, a.name, a.v, added, evicted, a.wantAdded, a.wantEvicted)
				}
			}
			if got := l.Snapshot(); !reflect.DeepEqual(got, tt.wantSnap) {
				t.Errorf("Snapshot() = %q, want %q", got, tt.wantSnap)
			}
			for name := range tt.seal {
				if !l.Sealed(name) {
					t.Errorf("Sealed(%q) = false", name)
				}
			}
		})
	}
}

func TestSealReplaces(t *testing.T) {
	t.Parallel()
	l := New(0)
	l.Add("repo", "a")
	l.Add("repo", "b")
	if l.Sealed("repo") {
		t.Fatal("Sealed before Seal")
	}
	l.Seal("repo", "c")
	if got := l.Snapshot()["repo"]; !slices.Equal(got, []string{"c"}) || !l.Sealed("repo") || l.Len("repo") != 1 {
		t.Errorf("after Seal: values %q, sealed %v, len %d; want [c], true, 1", got, l.Sealed("repo"), l.Len("repo"))
	}
}

func TestAddAll(t *testing.T) {
	t.Parallel()
	l := New(2)
	l.Seal("repo", "octo/tool")
	changed, evicted := l.AddAll(map[string]any{"repo": "x", "n": 1, "q": "a", "skip": nil})
	if !changed || evicted != nil {
		t.Fatalf("first AddAll = %v, %v; want true, nil", changed, evicted)
	}
	v := l.Version()
	changed, evicted = l.AddAll(map[string]any{"repo": "x", "n": 1.0, "q": "a"})
	if changed || evicted != nil || l.Version() != v {
		t.Errorf("repeat AddAll = %v, %v, version %d→%d; want no change", changed, evicted, v, l.Version())
	}
	l.AddAll(map[string]any{"q": "b"})
	changed, evicted = l.AddAll(map[string]any{"q": "c", "n": 2})
	if want := map[string][]string{"q": {"a"}}; !changed || !reflect.DeepEqual(evicted, want) {
		t.Errorf("AddAll past cap = %v, %v; want true, %v", changed, evicted, want)
	}
	want := map[string][]string{"repo": {"octo/tool"}, "n": {"1", "2"}, "q": {"b", "c"}}
	if got := l.Snapshot(); !reflect.DeepEqual(got, want) {
		t.Errorf("Snapshot() = %q, want %q", got, want)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	var l List // the zero value is usable
	steps := []struct {
		name       string
		do         func()
		wantChange bool
	}{
		{"add new", func() { l.Add("a", "x") }, true},
		{"add present", func() { l.Add("a", "x") }, false},
		{"add nil", func() { l.Add("a", nil) }, false},
		{"seal", func() { l.Seal("b", 1) }, true},
		{"add to sealed", func() { l.Add("b", 2) }, false},
		{"add all no change", func() { l.AddAll(map[string]any{"a": "x", "b": 3}) }, false},
		{"add all new", func() { l.AddAll(map[string]any{"a": "y"}) }, true},
	}
	for _, s := range steps {
		before := l.Version()
		s.do()
		if changed := l.Version() != before; changed != s.wantChange {
			t.Errorf("%s: version changed = %v, want %v", s.name, changed, s.wantChange)
		}
	}
	if l.Len("a") != 2 || l.Len("missing") != 0 {
		t.Errorf("Len(a), Len(missing) = %d, %d; want 2, 0", l.Len("a"), l.Len("missing"))
	}
}

func TestPersistRoundTrip(t *testing.T) {
	t.Parallel()
	l := New(3)
	l.Seal("repo", "octo/tool")
	for _, v := range []any{"c", "a", "b"} {
		l.Add("s", v)
	}
	l.Add("n", 42.0)
	l.Add("n", json.Number("123456789012345678901234567890"))
	l.Add("n", "42x")
	l.Add("o", map[string]any{"k": []any{1, "v"}})
	l.Seal("empty", nil)

	data, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"empty":{"sealed":true,"values":[]},"n":{"values":[42,123456789012345678901234567890,"42x"]},` +
		`"o":{"values":[{"k":[1,"v"]}]},"repo":{"sealed":true,"values":["octo/tool"]},"s":{"values":["c","a","b"]}}`
	if string(data) != want {
		t.Errorf("Marshal = %s\nwant      %s", data, want)
	}

	got := New(3)
	if err := json.Unmarshal(data, got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Snapshot(), l.Snapshot()) {
		t.Errorf("Snapshot after round trip = %q, want %q", got.Snapshot(), l.Snapshot())
	}
	for _, name := range []string{"repo", "empty"} {
		if !got.Sealed(name) {
			t.Errorf("Sealed(%q) = false after round trip", name)
		}
	}
	if got.Sealed("s") {
		t.Error(`Sealed("s") = true after round trip`)
	}
	if added, _ := got.Add("repo", "x"); added {
		t.Error("Add to a sealed name added after round trip")
	}
	// Order survives: the oldest ("c") goes first.
	if _, evicted := got.Add("s", "d"); !slices.Equal(evicted, []string{"c"}) {
		t.Errorf("eviction after round trip = %q, want [c]", evicted)
	}
	// Types survive: the number is a number, the string a string.
	got.mu.RLock()
	n := got.entries["n"]
	types := []any{n.order[0].val, n.order[2].val}
	got.mu.RUnlock()
	if want := []any{json.Number("42"), "42x"}; !reflect.DeepEqual(types, want) {
		t.Errorf("values after round trip = %#v, want %#v", types, want)
	}
}

func TestUnmarshal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    map[string][]string
		wantErr bool
	}{
		{"cap keeps newest", `{"a":{"values":["1","2","3","4"]}}`, map[string][]string{"a": {"3", "4"}}, false},
		{"sealed kept whole", `{"a":{"sealed":true,"values":["1","2","3"]}}`, map[string][]string{"a": {"1", "2", "3"}}, false},
		{"duplicates and nulls dropped", `{"a":{"values":[1,1.0,null,"x"]}}`, map[string][]string{"a": {"1", "x"}}, false},
		{"malformed", `{"a":{"values":[1,}}`, map[string][]string{"old": {"v"}}, true},
		{"wrong shape", `["a"]`, map[string][]string{"old": {"v"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := New(2)
			l.Add("old", "v")
			err := json.Unmarshal([]byte(tt.in), l)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Unmarshal error = %v, wantErr %v", err, tt.wantErr)
			}
			if got := l.Snapshot(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Snapshot() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRebaseKeepsOwnValuesNewest(t *testing.T) {
	t.Parallel()
	mine, theirs := New(3), New(3)
	mine.Seal("repo", "o/r")
	theirs.Seal("repo", "other/repo") // sealed on their side: ignored
	for _, v := range []string{"a", "b", "c"} {
		theirs.Add("label", v)
	}
	theirs.Add("assignee", "ann")
	mine.Add("label", "b")
	mine.Add("label", "d")
	data, err := theirs.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	added, err := mine.Rebase(data)
	if err != nil {
		t.Fatal(err)
	}
	// The union a b c + b d over a cap of 3: the stored oldest (a, c) go, not the values this list added.
	if got := fmt.Sprint(mine.Snapshot()); got != "map[assignee:[ann] label:[b c d] repo:[o/r]]" {
		t.Errorf("rebased = %s", got)
	}
	if fmt.Sprint(added) != "map[assignee:[ann] label:[c]]" {
		t.Errorf("added = %v", added)
	}
	// A full list keeps what it just added.
	full, stored := New(2), New(2)
	stored.Add("label", "a")
	stored.Add("label", "b")
	full.Add("label", "a")
	full.Add("label", "b")
	full.Add("label", "c") // evicts a
	data, _ = stored.MarshalJSON()
	if _, err := full.Rebase(data); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(full.Snapshot()); got != "map[label:[b c]]" {
		t.Errorf("full list after rebase = %s, want the new value kept", got)
	}
	if _, err := mine.Rebase([]byte("{not json")); err == nil {
		t.Error("Rebase of bad JSON succeeded")
	}
	sealed, err := SealedValues(data)
	if err != nil || len(sealed) != 0 {
		t.Errorf("SealedValues = %v, %v", sealed, err)
	}
}

// TestRestoreFromUnchanged: RestoreFrom reports the list unchanged exactly when it holds what the stored form
// holds, so that a resumed task writes back only a list that differs.
func TestRestoreFromUnchanged(t *testing.T) {
	saved := New(3)
	saved.Seal("repo", "o/r")
	saved.Add("label", "a")
	saved.Add("label", "b")
	saved.Add("n", 1.5)
	saved.Add("obj", map[string]any{"k": []any{true, "x"}})
	data, err := saved.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		data string
		seal map[string]any
		max  int
		want bool
	}{
		{"as saved", string(data), map[string]any{"repo": "o/r"}, 3, true},
		{"sealed value moved", string(data), map[string]any{"repo": "o/x"}, 3, false},
		{"sealed name no longer bound", string(data), nil, 3, false},
		{"a new binding", string(data), map[string]any{"repo": "o/r", "label": "c"}, 3, false},
		{"a duplicate value", `{"label":{"values":["a","a"]}}`, nil, 3, false},
		{"a null value", `{"label":{"values":["a",null]}}`, nil, 3, false},
		{"over the cap", `{"label":{"values":["a","b","c","d"]}}`, nil, 3, false},
		{"numbers kept as written", `{"n":{"values":[1.50,2]}}`, nil, 3, true},
	} {
		l := New(c.max)
		for name, v := range c.seal {
			l.Seal(name, v)
		}
		r, err := l.RestoreFrom([]byte(c.data))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if r.Unchanged != c.want {
			t.Errorf("%s: Unchanged = %v, want %v", c.name, r.Unchanged, c.want)
		}
		// Unchanged must mean what comparing the encodings would say.
		now, _ := l.MarshalJSON()
		var a, b any
		_ = json.Unmarshal(now, &a)
		_ = json.Unmarshal([]byte(c.data), &b)
		if eq := reflect.DeepEqual(a, b); eq != r.Unchanged {
			t.Errorf("%s: Unchanged = %v, but the encodings are equal: %v (%s against %s)", c.name, r.Unchanged, eq, now, c.data)
		}
	}
}
