package suggest

import "testing"

func TestClosest(t *testing.T) {
	t.Parallel()
	roots := []string{"parameters", "settings", "session", "runtime"}
	tests := []struct{ name, want string }{
		{"paramters", "parameters"},
		{"setings", "settings"},
		{"runtim", "runtime"},
		{"param", "parameters"},
		{"zzz", ""},
		{"settings", "settings"},
	}
	for _, tc := range tests {
		if got := Closest(tc.name, roots); got != tc.want {
			t.Errorf("Closest(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	if h := Hint("setings", roots); h != ` (did you mean "settings"?)` {
		t.Errorf("Hint = %q", h)
	}
	if h := Hint("settings", roots); h != "" {
		t.Errorf("Hint of an exact name = %q, want empty", h)
	}
}
