package allowlist

import (
	"encoding/json"
	"math"
	"testing"
)

func TestCanonical(t *testing.T) {
	t.Parallel()
	type repo struct {
		Owner string `json:"owner"`
		ID    int    `json:"id"`
	}
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"string", "octo/tool", "octo/tool"},
		{"string that looks like a number", "42.0", "42.0"},
		{"int", 42, "42"},
		{"int64", int64(42), "42"},
		{"uint8", uint8(42), "42"},
		{"float64 integral", 42.0, "42"},
		{"float32 integral", float32(42), "42"},
		{"json.Number", json.Number("42"), "42"},
		{"json.Number with fraction", json.Number("42.0"), "42"},
		{"json.Number with exponent", json.Number("4.2e1"), "42"},
		{"json.Number large integer keeps every digit", json.Number("123456789012345678901234567890"), "123456789012345678901234567890"},
		{"json.Number negative zero", json.Number("-0"), "0"},
		{"float negative zero", math.Copysign(0, -1), "0"},
		{"fraction", 0.5, "0.5"},
		{"float32 shortest", float32(0.1), "0.1"},
		{"int64 beyond float precision", int64(9007199254740993), "9007199254740993"},
		{"integral float beyond int64", 1e20, "100000000000000000000"},
		{"integral float as int64", float64(1 << 62), "4611686018427387904"},
		{"uint64 max", uint64(math.MaxUint64), "18446744073709551615"},
		{"large float", 1e21, "1e+21"},
		{"small float", 1e-7, "1e-7"},
		{"negative", -3.25, "-3.25"},
		{"true", true, "true"},
		{"false", false, "false"},
		{"null", nil, "null"},
		{"object sorted compact no HTML escaping", map[string]any{"b": 1.0, "a": []any{true, "x<y", nil}}, `{"a":[true,"x<y",null],"b":1}`},
		{"nested numbers canonical", []any{json.Number("1.50"), 2.0}, `[1.5,2]`},
		{"string slice through encoding/json", []string{"a", "b"}, `["a","b"]`},
		{"struct through encoding/json", repo{Owner: "octo", ID: 7}, `{"id":7,"owner":"octo"}`},
		{"NaN", math.NaN(), ""},
		{"Inf", math.Inf(1), ""},
		{"json.Number out of range", json.Number("1e400"), ""},
		{"json.Number not a number", json.Number("abc"), ""},
		{"NaN nested", map[string]any{"x": math.NaN()}, ""},
		{"channel", make(chan int), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Canonical(tt.in); got != tt.want {
				t.Errorf("Canonical(%#v) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestNormalizeKeepsType checks that the value a filter sees keeps its JSON type.
func TestNormalizeKeepsType(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"string stays string", "42", "42"},
		{"float becomes canonical json.Number", 42.0, json.Number("42")},
		{"bool stays bool", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, got, ok := normalize(tt.in); !ok || got != tt.want {
				t.Errorf("normalize(%#v) = %#v, %v; want %#v", tt.in, got, ok, tt.want)
			}
		})
	}
}
