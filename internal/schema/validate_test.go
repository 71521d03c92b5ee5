package schema

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func TestValidateNumbers(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, `{"properties":{"count":{"type":"integer","minimum":1,"maximum":100},
		"ratio":{"type":"number","exclusiveMaximum":1}}}`, Options{})
	tooBig := []Violation{{Path: "count", Detail: "must be less than or equal to 100"}}
	tests := []struct {
		name  string
		value any
		want  []Violation
	}{
		{"json.Number over", json.Number("500"), tooBig},
		{"float64 over", 500.0, tooBig},
		{"int over", 500, tooBig},
		{"int64 over", int64(500), tooBig},
		{"uint16 over", uint16(500), tooBig},
		{"float32 over", float32(500), tooBig},
		{"json.Number ok", json.Number("100"), nil},
		{"float64 ok", 100.0, nil},
		{"int ok", 1, nil},
		{"int under", 0, []Violation{{Path: "count", Detail: "must be greater than or equal to 1"}}},
		{"fraction is no integer", 5.5, []Violation{{Path: "count", Detail: "must be of type integer"}}},
		{"float64 integral is integer", 5.0, nil},
		{"huge float", 1e300, tooBig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := s.Validate(map[string]any{"count": tt.value}); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Validate(count=%v) = %v, want %v", tt.value, got, tt.want)
			}
		})
	}
	t.Run("exclusive maximum on float64", func(t *testing.T) {
		t.Parallel()
		want := []Violation{{Path: "ratio", Detail: "must be less than 1"}}
		if got := s.Validate(map[string]any{"ratio": 1.0}); !reflect.DeepEqual(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})
	t.Run("nested Go types go through encoding/json", func(t *testing.T) {
		t.Parallel()
		if got := s.Validate(map[string]int{"count": 500}); !reflect.DeepEqual(got, tooBig) {
			t.Errorf("got %v, want %v", got, tooBig)
		}
	})
}

func TestValidateMessages(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, `{"type":"object","properties":{
		"name":{"type":"string","minLength":2,"maxLength":3,"pattern":"^[a-z]+$"},
		"mode":{"enum":["fast","slow"]},
		"kind":{"const":"k"},
		"tags":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":2,"uniqueItems":true},
		"items":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}},
		"opt":{"type":["integer","null"]},
		"email":{"type":"string","format":"email"},
		"step":{"type":"number","multipleOf":0.5},
		"one":{"oneOf":[{"type":"string"},{"type":"string","maxLength":1}]},
		"github.token":{"type":"string"}
		},"required":["mode"],"additionalProperties":false}`, Options{})
	tests := []struct {
		name  string
		value string
		want  []Violation
	}{
		{"valid", `{"mode":"fast","name":"abc","tags":["a"],"items":[{"name":"x"}],"opt":null,"github.token":"t"}`, nil},
		{"required at the property path", `{}`, []Violation{{"mode", "is required"}}},
		{"string rules", `{"mode":"fast","name":"ABCD"}`, []Violation{
			{"name", "must be at most 3 characters long"},
			{"name", "must match the pattern ^[a-z]+$"},
		}},
		{"too short", `{"mode":"fast","name":"a"}`, []Violation{{"name", "must be at least 2 characters long"}}},
		{"enum lists the schema's values", `{"mode":"medium"}`, []Violation{{"mode", `must be one of: "fast", "slow"`}}},
		{"const", `{"mode":"fast","kind":"other"}`, []Violation{{"kind", "must equal the value the schema fixes (const)"}}},
		{"array rules", `{"mode":"fast","tags":["a","a","b"]}`, []Violation{
			{"tags", "must have at most 2 items"},
			{"tags", "must have unique items"},
		}},
		{"empty array", `{"mode":"fast","tags":[]}`, []Violation{{"tags", "must have at least 1 items"}}},
		{"nested paths", `{"mode":"fast","items":[{"name":"x"},{"name":3},{}]}`, []Violation{
			{"items.1.name", "must be of type string"},
			{"items.2.name", "is required"},
		}},
		{"type list", `{"mode":"fast","opt":"x"}`, []Violation{{"opt", "must be of type integer or null"}}},
		{"format", `{"mode":"fast","email":"nope"}`, []Violation{{"email", "must be a valid email"}}},
		{"multipleOf", `{"mode":"fast","step":0.7}`, []Violation{{"step", "must be a multiple of 0.5"}}},
		{"oneOf", `{"mode":"fast","one":"x"}`, []Violation{{"one", "must match exactly one of the allowed schemas (oneOf)"}}},
		{"additional property", `{"mode":"fast","extra":1}`, []Violation{{"extra", "is not an allowed property"}}},
		{"dotted property name", `{"mode":"fast","github.token":1}`, []Violation{{"github.token", "must be of type string"}}},
		{"root type", `[]`, []Violation{{"", "must be of type object"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := s.Validate(decode(t, tt.value)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Validate(%s)\n got %v\nwant %v", tt.value, got, tt.want)
			}
		})
	}
}

// TestViolationsNeverEchoValues feeds a secret to every kind of failing keyword.
func TestViolationsNeverEchoValues(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-secret"
	s := mustCompile(t, `{"properties":{
		"password":{"type":"string","format":"password","maxLength":3,"enum":["a","b"],"pattern":"^x$"},
		"email":{"type":"string","format":"email"},
		"fixed":{"const":"abc"},
		"number":{"type":"integer"},
		"list":{"type":"array","items":{"type":"integer"},"uniqueItems":true},
		"any":{"anyOf":[{"type":"integer"},{"maxLength":1}]},
		"not":{"not":{"type":"string"}},
		"obj":{"type":"object","additionalProperties":{"type":"integer"},"propertyNames":{"maxLength":3}}
		},"additionalProperties":false}`, Options{})
	value := map[string]any{
		"password": secret,
		"email":    secret,
		"fixed":    secret,
		"number":   secret,
		"list":     []any{secret, secret},
		"any":      secret,
		"not":      secret,
		"obj":      map[string]any{"k": secret},
		"extra":    secret,
	}
	vs := s.Validate(value)
	if len(vs) < 10 {
		t.Fatalf("only %d violations: %v", len(vs), vs)
	}
	for _, v := range vs {
		if strings.Contains(v.Detail, "hunter2") || strings.Contains(v.Path, "hunter2") {
			t.Errorf("violation echoes the value: %v", v)
		}
	}
}

func TestValidateRejectsNonJSON(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, `{"properties":{"a":{"type":"number"}}}`, Options{})
	for _, v := range []any{
		map[string]any{"a": json.Number("12abc")},
		map[string]any{"a": []any{func() {}}},
	} {
		if vs := s.Validate(v); len(vs) != 1 || vs[0].Path != "" {
			t.Errorf("Validate(%v) = %v, want one root violation", v, vs)
		}
	}
	for _, f := range []float64{math.Inf(1), math.NaN()} {
		if vs := s.Validate(map[string]any{"a": f}); len(vs) != 1 {
			t.Errorf("Validate(%v) = %v, want one violation", f, vs)
		}
	}
}

func TestIsJSONNumber(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"0": true, "-1": true, "1.5": true, "1e10": true, "-0.5E-3": true, "10": true,
		"": false, "-": false, "01": false, "1.": false, ".5": false, "1e": false, "0x10": false, "NaN": false,
		"1_000": false, "+1": false,
	} {
		if got := isJSONNumber(s); got != want {
			t.Errorf("isJSONNumber(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestValidateConcurrently(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, `{"properties":{"count":{"type":"integer","maximum":100},"name":{"type":"string"}}}`,
		Options{Parameters: true})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				vs := s.Validate(map[string]any{"count": i*50 + j, "name": "x"})
				if wantBad := i*50+j > 100; (len(vs) > 0) != wantBad {
					t.Errorf("count %d: %v", i*50+j, vs)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func BenchmarkValidate(b *testing.B) {
	s := mustCompile(b, `{"properties":{"count":{"type":"integer","minimum":1,"maximum":100},
		"query":{"type":"string","maxLength":200},"draft":{"type":"boolean","default":false}}}`,
		Options{Parameters: true})
	for _, bc := range []struct {
		name  string
		value map[string]any
		valid bool
	}{
		{"valid/json.Number", map[string]any{"count": json.Number("10"), "query": "hello"}, true},
		{"valid/float64", map[string]any{"count": 10.0, "query": "hello"}, true},
		{"invalid", map[string]any{"count": 500.0}, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if vs := s.Validate(bc.value); (len(vs) == 0) != bc.valid {
					b.Fatalf("violations: %v", vs)
				}
			}
		})
		// The baseline: the validator alone, given the value as it is.
		b.Run(bc.name+"/baseline", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := s.compiled.Validate(bc.value); (err == nil) != bc.valid {
					b.Fatalf("err = %v", err)
				}
			}
		})
	}
}
