package allowlist

import (
	"context"
	"fmt"
	"testing"
)

const benchPayload = `{"action":"opened","issue":{"number":7,"title":"CEL filters","user":{"login":"octo"},
 "assignee":{"login":"alice"},"labels":[{"name":"bug"}]},
 "repository":{"id":4242,"name":"repo-500","full_name":"octo/repo-500","owner":{"login":"octo"}},
 "sender":{"login":"alice"}}`

func benchList(n int) *List {
	l := New(0)
	for i := range n {
		l.Add("repo", fmt.Sprintf("octo/repo-%d", i))
	}
	return l
}

// BenchmarkMatch measures the common case of SPEC §6: one equality conjunct and 1,000 allowed values. The
// baseline is one evaluation of the same filter with `parameters` given.
func BenchmarkMatch(b *testing.B) {
	f := compileFilter(b, `event.payload.repository.full_name == parameters.repo`)
	l := benchList(1000)
	vars := eventVars(b, benchPayload)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	b.Run("baseline-eval", func(b *testing.B) {
		withParams := map[string]any{"event": vars["event"], "now": vars["now"],
			"parameters": map[string]any{"repo": "octo/repo-500"}}
		b.ReportAllocs()
		for b.Loop() {
			if ok, err := f.Program().EvalBool(ctx, withParams); !ok || err != nil {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("prepare+match", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if out := l.Match(ctx, f.Prepare(ctx, vars), 0); out.Reason != Matched {
				b.Fatal(out)
			}
		}
	})
	b.Run("match-prepared", func(b *testing.B) { // per task of a router fan-out
		d := f.Prepare(ctx, vars)
		b.ReportAllocs()
		for b.Loop() {
			if out := l.Match(ctx, d, 0); out.Reason != Matched {
				b.Fatal(out)
			}
		}
	})
	b.Run("miss", func(b *testing.B) { // value not in the set: no evaluation of the filter
		d := f.Prepare(ctx, eventVars(b, `{"repository":{"full_name":"octo/elsewhere"}}`))
		b.ReportAllocs()
		for b.Loop() {
			if out := l.Match(ctx, d, 0); out.Reason != FilterFalse {
				b.Fatal(out)
			}
		}
	})
	b.Run("enumerate-1000", func(b *testing.B) { // same test without a conjunct: the worst case it avoids
		g := compileFilter(b, `parameters.repo == event.payload.repository.full_name || false`)
		d := g.Prepare(ctx, eventVars(b, `{"repository":{"full_name":"octo/repo-0"}}`))
		b.ReportAllocs()
		for b.Loop() {
			if out := l.Match(ctx, d, 0); out.Reason != Matched || out.Evaluations != 1000 {
				b.Fatal(out)
			}
		}
	})
}

// BenchmarkAddAllNoChange measures the per-call path when every argument is already listed.
func BenchmarkAddAllNoChange(b *testing.B) {
	l := benchList(1000)
	l.Seal("owner", "octo")
	args := map[string]any{"owner": "octo", "repo": "octo/repo-999", "issue": 7.0, "draft": false}
	l.AddAll(args)
	v := l.Version()
	b.ReportAllocs()
	for b.Loop() {
		if changed, _ := l.AddAll(args); changed {
			b.Fatal("changed")
		}
	}
	if l.Version() != v {
		b.Fatal("version changed")
	}
}
