package celenv_test

import (
	"context"
	"testing"

	"cel.dev/cel-go/cel"
	"github.com/commonagents-go/tool/celenv"
)

// prPayload is a trimmed GitHub issue_comment delivery of about 1 KB.
const prPayload = `{"action": "created",
 "issue": {"url": "https://api.github.com/repos/octo/tool/issues/42", "number": 42, "title": "Add CEL filters",
  "user": {"login": "octo", "id": 1, "type": "User"}, "labels": [{"name": "enhancement", "color": "a2eeef"}],
  "state": "open", "locked": false, "comments": 3, "created_at": "2026-05-20T03:00:00Z",
  "pull_request": {"url": "https://api.github.com/repos/octo/tool/pulls/42", "merged_at": null},
  "body": "This adds filters to receive blocks."},
 "comment": {"id": 1001, "user": {"login": "reviewer", "id": 2, "type": "User"},
  "created_at": "2026-05-20T03:45:00Z", "body": "Looks good to me, one nit on the cost limit."},
 "repository": {"id": 4242, "name": "tool", "full_name": "octo/tool", "private": false,
  "owner": {"login": "octo", "id": 1, "type": "Organization"}, "html_url": "https://github.com/octo/tool",
  "default_branch": "main", "stargazers_count": 10, "topics": ["cel", "agents"]},
 "sender": {"login": "reviewer", "id": 2, "type": "User", "site_admin": false}}`

func filterVars(b *testing.B) map[string]any {
	if n := len(prPayload); n < 900 || n > 1200 {
		b.Fatalf("payload is %d bytes, want about 1 KB", n)
	}
	return map[string]any{
		"event": map[string]any{"payload": decode(b, prPayload), "name": "comment",
			"headers": map[string]any{"x-github-event": "issue_comment"}},
		"parameters": map[string]any{"owner": "octo", "repo": "tool"},
		"now":        "2026-05-20T03:45:00Z",
	}
}

func BenchmarkEvalFilter(b *testing.B) {
	p := compile(b, celenv.ScopeFilter, prFilter)
	vars := filterVars(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := p.EvalBool(ctx, vars); !ok || err != nil {
			b.Fatalf("EvalBool = %v, %v", ok, err)
		}
	}
}

// BenchmarkEvalFilterBackground is EvalFilter with a context that cannot end (no cancellation set-up).
func BenchmarkEvalFilterBackground(b *testing.B) {
	p := compile(b, celenv.ScopeFilter, prFilter)
	vars := filterVars(b)
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := p.EvalBool(context.Background(), vars); !ok || err != nil {
			b.Fatalf("EvalBool = %v, %v", ok, err)
		}
	}
}

// BenchmarkEvalFilterRawCEL is the baseline: the same filter as a bare cel-go program evaluated on the same
// variables, without and with the cost limit celenv always sets.
func BenchmarkEvalFilterRawCEL(b *testing.B) {
	env, err := cel.NewEnv(
		cel.Variable("event", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("parameters", cel.MapType(cel.StringType, cel.DynType)))
	if err != nil {
		b.Fatal(err)
	}
	checked, iss := env.Compile(prFilter)
	if iss.Err() != nil {
		b.Fatal(iss.Err())
	}
	for _, bb := range []struct {
		name string
		opts []cel.ProgramOption
	}{
		{"plain", nil},
		{"costlimit", []cel.ProgramOption{cel.CostLimit(celenv.DefaultCost)}},
	} {
		b.Run(bb.name, func(b *testing.B) {
			prg, err := env.Program(checked, bb.opts...)
			if err != nil {
				b.Fatal(err)
			}
			vars := filterVars(b)
			b.ReportAllocs()
			for b.Loop() {
				if out, _, err := prg.Eval(vars); err != nil || out.Value() != true {
					b.Fatalf("Eval = %v, %v", out, err)
				}
			}
		})
	}
}

func BenchmarkEvalAction(b *testing.B) {
	p := compile(b, celenv.ScopeAction, `{'date': now, 'namespace': context.agent.namespace, 'count': input.count + 1}`)
	vars := map[string]any{
		"context": map[string]any{"agent": map[string]any{"name": "bot", "namespace": "team"}},
		"input":   map[string]any{"count": int64(41)},
		"now":     "2026-05-20T03:45:00Z",
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Eval(ctx, vars); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompile(b *testing.B) {
	if _, err := celenv.Env(celenv.ScopeFilter); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := celenv.Compile(celenv.ScopeFilter, prFilter, celenv.Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}
