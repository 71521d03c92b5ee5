package celenv

import "testing"

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
