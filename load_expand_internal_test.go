package tool

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// TestDecodedCopyIsTheRoundTrip pins decodedCopy to what encoding a backend's parameters as JSON and decoding them
// gives, and that it declines what that round trip would change (invalid UTF-8) or refuse (a NaN).
func TestDecodedCopyIsTheRoundTrip(t *testing.T) {
	t.Parallel()
	shared := map[string]any{"type": "string", "maxLength": uint64(20)}
	v := map[string]any{
		"type": "object", "required": []any{"a", "b"},
		"properties": map[string]any{
			"a": shared, "b": map[string]any{"type": "array", "items": shared, "minItems": uint64(1)},
			"c": map[string]any{"enum": []any{nil, true, 1.5, "x<y"}, "default": int(3), "maximum": int64(-7)},
			"d": map[string]any{"maximum": uint64(math.MaxUint64), "minimum": 1e300, "multipleOf": 0.1},
		},
	}
	got, ok := decodedCopy(v)
	raw, _ := json.Marshal(v)
	var want any
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("decodedCopy = %#v, %v; want %#v", got, ok, want)
	}
	for _, bad := range []any{
		map[string]any{"description": "bad \xff utf-8"}, map[string]any{"bad \xfe": true},
		[]any{math.NaN()}, map[string]any{"x": math.Inf(1)}, []string{"typed"}, float32(0.1), json.Number("1"),
	} {
		if _, ok := decodedCopy(bad); ok {
			t.Errorf("decodedCopy(%#v) accepted it", bad)
		}
	}
}
