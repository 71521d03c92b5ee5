package celenv_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/commonagents-go/tool/celenv"
)

// The size limit bounds what an expression builds, which the cost limit does not: doubling a 1 MiB string five
// times costs few operations and builds 63 MiB.
func TestSizeLimit(t *testing.T) {
	s := strings.Repeat("x", 1<<20)
	input := map[string]any{"input": map[string]any{"s": s, "list": []any{1.0, 2.0, 3.0}}}
	tests := []struct {
		name  string
		scope celenv.Scope
		expr  string
		lim   celenv.Limits
		ok    bool
	}{
		{"doubling a string", celenv.ScopeAction, "[input.s]" + strings.Repeat(".map(x, x + x)", 5), celenv.Limits{Cost: 100_000}, false},
		{"doubling a list", celenv.ScopeAction, "[input.list]" + strings.Repeat(".map(x, x + x)", 22) + ".size()", celenv.Limits{}, false},
		{"one large string many times in the result", celenv.ScopeAction, "lists.range(100).map(i, input.s)", celenv.Limits{}, false},
		{"a string under the limit", celenv.ScopeAction, "input.s + input.s", celenv.Limits{Size: 3 << 20}, true},
		{"a string over the limit", celenv.ScopeAction, "input.s + input.s", celenv.Limits{Size: 1 << 20}, false},
		{"returning a large variable", celenv.ScopeAction, "input.s", celenv.Limits{Size: 2 << 20}, true},
		{"a comprehension's accumulator counts its growth", celenv.ScopeAction, "lists.range(50000).map(i, i).size()", celenv.Limits{Size: 4 << 20}, true},
		{"a detect", celenv.ScopeDetect, "[response.s]" + strings.Repeat(".map(x, x + x)", 5), celenv.Limits{}, false},
		{"a filter", celenv.ScopeFilter, "[event.payload.s]" + strings.Repeat(".map(x, x + x)", 5) + ".size() > 0", celenv.Limits{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := celenv.Compile(tt.scope, tt.expr, tt.lim)
			if err != nil {
				t.Fatal(err)
			}
			vars := input
			switch tt.scope {
			case celenv.ScopeFilter:
				vars = map[string]any{"event": map[string]any{"payload": map[string]any{"s": s}}, "parameters": map[string]any{}}
			case celenv.ScopeDetect:
				vars = map[string]any{"response": map[string]any{"s": s}, "poll": map[string]any{}, "parameters": map[string]any{}}
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err = p.Eval(context.Background(), vars)
			runtime.ReadMemStats(&after)
			if tt.ok {
				if err != nil {
					t.Fatalf("Eval: %v", err)
				}
				return
			}
			if !errors.Is(err, celenv.ErrSizeLimit) {
				t.Fatalf("Eval error = %v, want ErrSizeLimit", err)
			}
			if n := after.TotalAlloc - before.TotalAlloc; n > 2*celenv.DefaultSize+8<<20 {
				t.Errorf("stopping it allocated %d MiB", n>>20)
			}
		})
	}
}

// EvalBinding, the helper hosts use for agent bindings, has the default size limit.
func TestEvalBindingSizeLimit(t *testing.T) {
	ctx := map[string]any{"context": map[string]any{"s": strings.Repeat("x", 1<<20)}}
	_, err := celenv.EvalBinding(context.Background(), "[context.s]"+strings.Repeat(".map(x, x + x)", 5), ctx)
	if !errors.Is(err, celenv.ErrSizeLimit) {
		t.Fatalf("EvalBinding error = %v, want ErrSizeLimit", err)
	}
}
