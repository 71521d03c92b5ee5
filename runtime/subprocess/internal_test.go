package subprocess

import (
	"encoding/json"
	"testing"
)

func TestNextIDStaysBelow2To53(t *testing.T) {
	i := &instance{}
	i.ids.Store(1<<53 - 3)
	for _, want := range []uint64{1<<53 - 2, 1<<53 - 1, 1, 2} {
		if got := i.nextID(); got != want {
			t.Fatalf("nextID = %d, want %d", got, want)
		}
	}
}

func TestIDFromPrefix(t *testing.T) {
	tests := []struct {
		prefix string
		id     uint64
		ok     bool
	}{
		{`{"jsonrpc":"2.0","id":7,"result":"xxxxxxxx`, 7, true},
		{`{"result":{"a":[1,{"id":3}]},"id":"9","jsonrpc":"2.0"}`, 9, true},
		{`{"jsonrpc":"2.0","result":"xxxxxxxxxxxx`, 0, false},
		{`{"id":-1}`, 0, false},
		{`[1,2]`, 0, false},
	}
	for _, tc := range tests {
		id, ok := idFromPrefix([]byte(tc.prefix))
		if id != tc.id || ok != tc.ok {
			t.Errorf("idFromPrefix(%s) = %d, %v; want %d, %v", tc.prefix, id, ok, tc.id, tc.ok)
		}
	}
}

func TestParseID(t *testing.T) {
	for raw, want := range map[string]uint64{`12`: 12, `"12"`: 12, `12.0`: 12, `1e3`: 1000} {
		if got, ok := parseID(json.RawMessage(raw)); !ok || got != want {
			t.Errorf("parseID(%s) = %d, %v; want %d", raw, got, ok, want)
		}
	}
	for _, raw := range []string{`null`, `"x"`, `1.5`, `-2`, ``} {
		if _, ok := parseID(json.RawMessage(raw)); ok {
			t.Errorf("parseID(%s) accepted", raw)
		}
	}
}
