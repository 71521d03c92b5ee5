package celenv

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	const src = `event.payload.m[event.payload.k] + int('12')`
	tests := []struct{ msg, want string }{
		{"no such key: k", "no such key: k"},
		{"no such key: hunter2", "no such key: …"},
		{"no such key: ", "no such key: …"},
		{"insert failed: key hunter2 already exists", "insert failed: key …"},
		{"cannot initialize optional entry 'k' from non-optional value hunter2", "cannot initialize optional entry 'k' from non-optional value …"},
		{"type conversion error from 'string' to 'int'", "type conversion error from 'string' to 'int'"},
		{`strconv.ParseInt: parsing "hunter2": invalid syntax`, `strconv.ParseInt: parsing "…": invalid syntax`},
		{`strconv.ParseInt: parsing "12": invalid syntax`, `strconv.ParseInt: parsing "12": invalid syntax`},
		{`invalid RFC 3339 timestamp "hunter2`, `invalid RFC 3339 timestamp "…`},
		{"no such overload: _+_", "no such overload: _+_"},
		{"division by zero", "division by zero"},
	}
	for _, tt := range tests {
		t.Run(tt.msg, func(t *testing.T) {
			t.Parallel()
			if got := redact(tt.msg, src); got != tt.want {
				t.Errorf("redact(%q) = %q, want %q", tt.msg, got, tt.want)
			}
		})
	}
}

// TestEvalErrorMissingField pins which evaluation errors count as a missing field: only a missing key or
// attribute, wherever it sits in the expression; type errors, bad indexes and the cost limit do not.
func TestEvalErrorMissingField(t *testing.T) {
	t.Parallel()
	payload := map[string]any{"ref": "refs/heads/main", "n": 3.0, "list": []any{1.0}, "repository": map[string]any{"name": "x"}}
	tests := []struct {
		expr    string
		missing bool
	}{
		{`event.payload.action == 'created'`, true},
		{`has(event.payload.issue.pull_request)`, true}, // a missing middle key under has()
		{`!(event.payload.action == 'created')`, true},
		{`event.payload.action != 'created'`, true},
		{`event.payload.repository.owner.login == 'o'`, true},
		{`event.payload['action'] == 'x'`, true},
		{`event.payload.ref + 1 == 2`, false}, // no such overload
		{`int(event.payload.ref) == 1`, false},
		{`event.payload.list[5] == 1`, false},
		{`int(event.payload.n) / 0 == 1`, false},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			prog, err := Compile(ScopeFilter, tt.expr, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = prog.EvalBool(context.Background(), map[string]any{"event": map[string]any{"payload": payload}})
			if err == nil {
				t.Fatal("evaluation succeeded, want an error")
			}
			if got := errors.Is(err, ErrMissingField); got != tt.missing {
				t.Errorf("errors.Is(%v, ErrMissingField) = %v, want %v", err, got, tt.missing)
			}
		})
	}
}

// TestEvalErrorBeyondFloat64: reading a number beyond float64's range, which decoded JSON keeps as a json.Number,
// fails saying so, without the number; a number within range still compares.
func TestEvalErrorBeyondFloat64(t *testing.T) {
	t.Parallel()
	prog, err := Compile(ScopeFilter, `event.payload.build > 3.0`, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for n, want := range map[json.Number]string{"1e400": "beyond float64's range", "-1E+999": "beyond float64's range", "1e300": ""} {
		_, err := prog.EvalBool(context.Background(), map[string]any{"event": map[string]any{"payload": map[string]any{"build": n}}})
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", n, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), string(n))):
			t.Errorf("%s: error %v, want one saying %q without the number", n, err, want)
		}
	}
}
