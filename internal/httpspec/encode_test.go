package httpspec

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	values := []any{
		nil, true, false, "", "plain", `quote " backslash \ slash /`, "ctl \x00\x01\x1f\n\r\t\x7f",
		"<html> & ünïcødé € 😀", "bad \xff\xfe utf8", "sep \u2028 \u2029", json.Number("12"), json.Number("-0.5e+10"),
		0.0, 1.5, -2.25e-7, 1e21, 123456789.0, 1e-6, float32(3.4), 42, int64(-9007199254740993), uint64(math.MaxUint64),
		int32(7), int8(-3), []any{}, []any{1, "a", nil, []any{true}},
		map[string]any{}, map[string]any{"b": 1, "a": map[string]any{"z": []any{"x"}, "y": nil}, "é": "k", "<": ">"},
		map[string]string{"typed": "map"},
	}
	for _, v := range values {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatalf("encoding/json(%#v): %v", v, err)
		}
		got, err := appendJSON(nil, v)
		if err != nil {
			t.Errorf("appendJSON(%#v): %v", v, err)
			continue
		}
		if string(got) != string(bytes.TrimSuffix(want.Bytes(), []byte("\n"))) {
			t.Errorf("appendJSON(%#v) = %s, want %s", v, got, want.Bytes())
		}
	}
}

func TestAppendJSONRejects(t *testing.T) {
	t.Parallel()
	for _, v := range []any{math.NaN(), math.Inf(-1), json.Number("abc"), json.Number("01"), json.Number("1."),
		json.Number("-"), json.Number("1e"), []any{map[string]any{"x": math.Inf(1)}}, make(chan int)} {
		if got, err := appendJSON(nil, v); err == nil {
			t.Errorf("appendJSON(%#v) = %s, want an error", v, got)
		}
	}
}
