package celenv_test

import (
	"context"
	"strings"
	"testing"

	"github.com/commonagents-go/tool/celenv"
)

// FalseFor says false only when evaluating says false: each expression is evaluated over payloads that hold the
// guarded field as another string, the same string, another type, null, and not at all, with parameters that make
// the rest true and false.
func TestFalseForAgreesWithEvaluation(t *testing.T) {
	t.Parallel()
	payloads := map[string]map[string]any{
		"created":   {"action": "created", "repo": "r", "hook": map[string]any{"kind": "push"}},
		"submitted": {"action": "submitted", "repo": "r", "hook": map[string]any{"kind": "pull"}},
		"number":    {"action": 5, "repo": "r"},
		"null":      {"action": nil, "repo": "r"},
		"absent":    {"repo": "r"},
		"not a map": {"action": "created", "repo": "r", "hook": "push"},
	}
	tests := []struct {
		expr    string
		refutes []string // the payloads FalseFor refuses
	}{
		{`event.payload.action == 'created' && event.payload.repo == parameters.repo`, []string{"submitted"}},
		{`'created' == event.payload['action'] && event.payload.repo == parameters.repo`, []string{"submitted"}},
		{`event.payload.repo == parameters.repo && event.payload.action == 'created'`, nil}, // not leading
		{`event.payload.action == 'created' && event.payload.hook.kind == 'push' && event.payload.repo == parameters.repo`,
			[]string{"submitted"}},
		{`event.payload.hook.kind == 'push'`, []string{"submitted"}},
		{`event.payload.action == 'created' || event.payload.repo == parameters.repo`, nil}, // not a conjunction
		{`event.payload.action != 'created'`, nil},
		{`event.payload.?action == optional.of('created')`, nil},
		{`has(event.payload.action) && event.payload.action == 'created'`, nil},
		{`parameters.repo == 'r' && event.payload.action == 'created'`, nil},
		{`event.payload.action == 5 && event.payload.repo == parameters.repo`, nil},
		{`event.payload.absent == 'x' && event.payload.action == 'created'`, []string{"submitted"}},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			p := compile(t, celenv.ScopeFilter, tt.expr)
			refuted := 0
			for name, payload := range payloads {
				vars := map[string]any{"event": map[string]any{"payload": payload, "name": "e"}, "now": "2026-11-29T00:00:00Z"}
				got := p.FalseFor(vars)
				want := false
				for _, r := range tt.refutes {
					want = want || r == name
				}
				if got != want {
					t.Errorf("%s: FalseFor = %v, want %v", name, got, want)
				}
				if !got {
					continue
				}
				refuted++
				for _, repo := range []string{"r", "other"} {
					withParams := map[string]any{"event": vars["event"], "now": vars["now"], "parameters": map[string]any{"repo": repo}}
					if ok, err := p.EvalBool(ctx, withParams); ok || err != nil {
						t.Errorf("%s, repo %s: FalseFor refuted it, but evaluation says %v, %v", name, repo, ok, err)
					}
				}
			}
			if refuted != len(tt.refutes) {
				t.Errorf("refuted %d payloads, want %d", refuted, len(tt.refutes))
			}
		})
	}
}

// Programs of other scopes have no guards: a detect or extract expression is not a boolean test.
func TestFalseForOnlyFilters(t *testing.T) {
	t.Parallel()
	p := compile(t, celenv.ScopeDetect, `response.items.filter(i, i.kind == 'x')`)
	if p.FalseFor(map[string]any{"response": map[string]any{"items": []any{}}}) {
		t.Error("a detect expression refuted its input")
	}
}

// A cost limit that evaluating the guard could exceed makes FalseFor say it cannot tell: evaluation stops on the
// limit, an error, not false.
func TestFalseForWithinTheCostLimit(t *testing.T) {
	t.Parallel()
	const expr = `event.payload.action == 'created' && true`
	for _, action := range []string{"opened", strings.Repeat("x", 500)} { // a long string costs its traversal
		vars := map[string]any{"event": map[string]any{"payload": map[string]any{"action": action}}}
		for cost := uint64(1); cost <= 200; cost++ {
			p, err := celenv.Compile(celenv.ScopeFilter, expr, celenv.Limits{Cost: cost})
			if err != nil {
				t.Fatal(err)
			}
			ok, err := p.EvalBool(context.Background(), vars)
			if got := p.FalseFor(vars); got && (ok || err != nil) {
				t.Errorf("%d-byte action, cost limit %d: FalseFor = true; evaluation says %v, %v", len(action), cost, ok, err)
			}
			if cost == 200 && !p.FalseFor(vars) {
				t.Errorf("%d-byte action, cost limit 200: FalseFor = false, want true: the guard costs less", len(action))
			}
		}
	}
}
