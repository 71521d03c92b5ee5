package schema

import (
	"encoding/json"

	"math"
	"testing"
)

// TestTypeCheckAgreesWithTheValidator checks the shortcut never calls a value valid that the validator rejects,
// and that it does take the shortcut for the common valid cases (else it would be dead code).
func TestTypeCheckAgreesWithTheValidator(t *testing.T) {
	t.Parallel()
	schemas := []map[string]any{
		{"properties": map[string]any{"s": map[string]any{"type": "string", "description": "d"},
			"i": map[string]any{"type": "integer", "default": json.Number("1")}, "n": map[string]any{"type": "number"},
			"b": map[string]any{"type": "boolean"}, "o": map[string]any{"type": "object"},
			"a": map[string]any{"type": "array"}, "z": map[string]any{"type": "null", "default": nil},
			"any": map[string]any{"title": "anything", "default": "x"}}},
		{"properties": map[string]any{"s": map[string]any{"type": "string", "minLength": json.Number("3")}}},
		{"properties": map[string]any{"e": map[string]any{"type": "string", "enum": []any{"a"}}}},
		{"properties": map[string]any{"u": map[string]any{"type": "string", "format": "uri"}}},
		{"properties": map[string]any{"s": map[string]any{"type": "string"}}, "additionalProperties": false},
		{"properties": map[string]any{"n": map[string]any{"type": "number", "minimum": json.Number("1"),
			"exclusiveMaximum": json.Number("1000")}, "i": map[string]any{"maximum": json.Number("9007199254740992")},
			"s": map[string]any{"maxLength": json.Number("2"), "minLength": json.Number("1")},
			"a": map[string]any{"exclusiveMinimum": -1.5}}},
	}
	shortcut := map[int]bool{0: true, 1: true, 5: true}
	values := []any{
		"x", "", json.Number("1"), json.Number("1.0"), json.Number("1e3"), json.Number("-0"), json.Number("9007199254740993"),
		1.0, 1.5, math.Inf(1), math.NaN(), 1e300, int64(3), 3, true, nil, map[string]any{"k": 1.0}, []any{1.0, "a"},
		[]string{"a"}, map[string]string{"a": "b"}, float32(1), uint(3),
		json.Number("1000"), json.Number("999.99999999999999999"), json.Number("1e999"), json.Number("0.99999999999999999"),
		json.Number("9007199254740993"), 9007199254740992.0, json.Number("-1.5"), -1.4999999999999998, "é€", "abc", 999.5,
	}
	names := []string{"s", "i", "n", "b", "o", "a", "z", "any", "e", "u", "extra"}
	shortcuts := 0
	for si, doc := range schemas {
		s, errs := Compile(doc, nil, Options{Parameters: true})
		if errs != nil {
			t.Fatalf("schema %d: %v", si, errs)
		}
		if (s.fast != nil) != shortcut[si] {
			t.Fatalf("schema %d: shortcut %v, want %v", si, s.fast != nil, shortcut[si])
		}
		full := map[string]any{"s": "abc", "i": json.Number("1"), "n": 2.5, "b": true, "o": map[string]any{},
			"a": []any{}, "z": nil, "any": "v", "e": "a", "u": "https://x"}
		for _, name := range names {
			for vi, v := range values {
				obj := map[string]any{}
				for k, fv := range full {
					obj[k] = fv
				}
				obj[name] = v
				slow := validate(s.compiled, obj) == nil
				fast := s.fast != nil && s.fast.valid(obj)
				if fast {
					shortcuts++
				}
				if fast && !slow {
					t.Errorf("schema %d: %s = %#v (value %d): shortcut says valid, the validator says %v",
						si, name, v, vi, validate(s.compiled, obj))
				}
				if got := s.Validate(obj) == nil; got != slow {
					t.Errorf("schema %d: %s = %#v: Validate valid=%v, the validator %v", si, name, v, got, slow)
				}
			}
		}
		missing := map[string]any{}
		if s.fast != nil && s.fast.valid(missing) {
			t.Errorf("schema %d: an object missing required properties passed the shortcut", si)
		}
	}
	if shortcuts < 20 {
		t.Errorf("the shortcut was taken only %d times", shortcuts)
	}
}
