package celenv_test

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/commonagents-go/tool/celenv"
)

func TestParameterRefs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		scope   celenv.Scope
		expr    string
		want    []string
		dynamic bool
	}{
		{celenv.ScopeFilter, prFilter, []string{"owner", "repo"}, false},
		{celenv.ScopeFilter, `parameters['repo'] == event.name && parameters.repo != '' && has(parameters.z)`, []string{"repo", "z"}, false},
		{celenv.ScopeFilter, `parameters.?x.orValue(1) == 1 && parameters[?'y'].hasValue()`, []string{"x", "y"}, false},
		{celenv.ScopeFilter, `event.payload.items.exists(it, it.owner == parameters.owner)`, []string{"owner"}, false},
		{celenv.ScopeFilter, `parameters[event.name] == 1 && parameters.a == 2`, []string{"a"}, true},
		{celenv.ScopeFilter, `size(parameters) > 0`, nil, true},
		{celenv.ScopeFilter, `event.name == 'x'`, nil, false},
		{celenv.ScopeDetect, `response.items.filter(i, i.owner == parameters.owner)`, []string{"owner"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			p := compile(t, tt.scope, tt.expr)
			if got := p.ParameterRefs(); !slices.Equal(got, tt.want) {
				t.Errorf("ParameterRefs() = %q, want %q", got, tt.want)
			}
			if got := p.DynamicParameterRefs(); got != tt.dynamic {
				t.Errorf("DynamicParameterRefs() = %v, want %v", got, tt.dynamic)
			}
		})
	}
}

func TestEqualityConjuncts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		scope celenv.Scope
		expr  string
		want  [][2]string // param, value source
	}{
		{celenv.ScopeFilter, prFilter, [][2]string{
			{"owner", "event.payload.repository.owner.login"}, {"repo", "event.payload.repository.name"}}},
		{celenv.ScopeFilter, `parameters['repo'] == event.payload.name && (event.name == 'a' && parameters.n == math.greatest([event.payload.a, 2]))`,
			[][2]string{{"repo", "event.payload.name"}, {"n", "math.greatest([event.payload.a, 2])"}}},
		{celenv.ScopeFilter, `has(event.payload.x) && event.payload.ids.exists(i, i == parameters.id)`, nil}, // inside a macro: not top level
		{celenv.ScopeFilter, `event.payload.a == parameters.a || event.payload.b == parameters.b`, nil},      // disjunction
		{celenv.ScopeFilter, `parameters.a == parameters.b`, nil},                                            // both sides parameters
		{celenv.ScopeFilter, `event.payload.x == parameters.a + 'x'`, nil},                                   // not a plain reference
		{celenv.ScopeFilter, `true == has(parameters.a)`, nil},                                               // presence test is not the value
		{celenv.ScopeFilter, `event.payload.x != parameters.a`, nil},
		{celenv.ScopeFilter, `event.name == 'x'`, nil},
		{celenv.ScopeDetect, `parameters.owner == 'x' ? response.items : []`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			var got [][2]string
			for _, c := range compile(t, tt.scope, tt.expr).EqualityConjuncts() {
				if c.Value.Scope() != tt.scope || len(c.Value.ParameterRefs()) != 0 {
					t.Errorf("conjunct %s: value scope %v with refs %q", c.Param, c.Value.Scope(), c.Value.ParameterRefs())
				}
				got = append(got, [2]string{c.Param, c.Value.Source()})
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("EqualityConjuncts() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEqualityConjunctValueEval(t *testing.T) {
	t.Parallel()
	cs := compile(t, celenv.ScopeFilter, prFilter).EqualityConjuncts()
	vars := map[string]any{"event": map[string]any{"payload": decode(t,
		`{"repository": {"name": "tool", "owner": {"login": "octo"}}}`)}}
	want := map[string]any{"owner": "octo", "repo": "tool"}
	if len(cs) != len(want) {
		t.Fatalf("got %d conjuncts, want %d", len(cs), len(want))
	}
	for _, c := range cs {
		got, err := c.Value.Eval(context.Background(), vars)
		if err != nil || got != want[c.Param] {
			t.Errorf("conjunct %s = %v, %v; want %v", c.Param, got, err, want[c.Param])
		}
	}
}
