package celenv

import (
	"slices"
	"testing"
)

func TestRequiredKeys(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{"context.team + '@' + c.org", []string{"org", "team"}},
		{"context['team'] + context.team", []string{"team"}},
		{"context.a.b", []string{"a"}},
		{"has(context.x) ? context.x : 'none'", nil},
		{"input.flag ? context.a : context.b", nil},
		{"size(context.list) > 0 && context.ok", nil},
		{"size(context.list) > 0", []string{"list"}},
		{"context.?maybe.orValue('d')", nil},
		{"[1, 2].map(c, c + 1)", nil},
		{"[1, 2].map(x, context.k)", nil},
		{"{'k': context.v}", []string{"v"}},
		{"input.a + 1", nil},
	} {
		prog, err := Compile(ScopeAction, tc.expr, Limits{})
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		got := prog.RequiredKeys("context", "c")
		if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Errorf("%s: RequiredKeys = %v, want %v", tc.expr, got, tc.want)
		}
	}
}
