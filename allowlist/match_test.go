package allowlist

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/commonagents-go/tool/celenv"
)

func compileFilter(t testing.TB, expr string) *Filter {
	t.Helper()
	p, err := celenv.Compile(celenv.ScopeFilter, expr, celenv.Limits{})
	if err != nil {
		t.Fatalf("compile %q: %v", expr, err)
	}
	return NewFilter(p)
}

// eventVars returns filter variables for a JSON payload, decoded as an HTTP handler would (numbers as float64).
func eventVars(t testing.TB, payload string) map[string]any {
	t.Helper()
	var p any
	if err := json.Unmarshal([]byte(payload), &p); err != nil {
		t.Fatalf("decode payload: %v", err)
	}
	return map[string]any{"event": map[string]any{"payload": p, "name": "issues"}, "now": "2026-05-20T03:45:00Z"}
}

const walkthrough = `event.payload.issue.assignee.login == parameters.assignee && event.payload.repository.name == parameters.repo`

func assigned(login, repo string) string {
	return fmt.Sprintf(`{"issue":{"assignee":{"login":%q}},"repository":{"name":%q}}`, login, repo)
}

// TestMatchWalkthrough follows the SPEC §6 example: repo bound and sealed, assignee learnt from calls.
func TestMatchWalkthrough(t *testing.T) {
	t.Parallel()
	f := compileFilter(t, walkthrough)
	l := New(0)
	l.Seal("repo", "tool")
	steps := []struct {
		name     string
		add      string // assignee added before delivering
		payload  string
		want     Reason
		wantName string
		wantEval int
		wantArgs map[string]any
	}{
		{"no assignee yet", "", assigned("alice", "tool"), EmptyAllowList, "assignee", 0, nil},
		{"alice learnt", "alice", assigned("alice", "tool"), Matched, "", 1, map[string]any{"assignee": "alice", "repo": "tool"}},
		// One value per name: the one assignment is evaluated instead of the conjuncts.
		{"bob not yet", "", assigned("bob", "tool"), FilterFalse, "", 1, nil},
		{"other repo", "", assigned("alice", "other"), FilterFalse, "", 1, nil},
		// Two assignees: membership rules bob's twin out without evaluating.
		{"carol learnt", "carol", assigned("dave", "tool"), FilterFalse, "", 0, nil},
		{"bob learnt", "bob", assigned("bob", "tool"), Matched, "", 1, map[string]any{"assignee": "bob", "repo": "tool"}},
		{"alice still", "", assigned("alice", "tool"), Matched, "", 1, map[string]any{"assignee": "alice", "repo": "tool"}},
		{"repo sealed", "", assigned("alice", "tool"), Matched, "", 1, map[string]any{"assignee": "alice", "repo": "tool"}},
	}
	for _, s := range steps {
		if s.add != "" {
			l.Add("assignee", s.add)
		}
		if s.name == "repo sealed" {
			l.Add("repo", "other") // a call naming another repo must not widen the filter
			if out := l.Match(context.Background(), f.Prepare(context.Background(), eventVars(t, assigned("alice", "other"))), 0); out.Reason != FilterFalse {
				t.Errorf("%s: other repo = %s, want %s", s.name, out.Reason, FilterFalse)
			}
		}
		out := l.Match(context.Background(), f.Prepare(context.Background(), eventVars(t, s.payload)), 0)
		if out.Reason != s.want || out.Name != s.wantName || out.Evaluations != s.wantEval || !reflect.DeepEqual(out.Parameters, s.wantArgs) {
			t.Errorf("%s: Match = %+v; want reason %s, name %q, %d evaluations, parameters %v",
				s.name, out, s.want, s.wantName, s.wantEval, s.wantArgs)
		}
	}
}

func TestMatch(t *testing.T) {
	t.Parallel()
	type entry struct {
		name string
		vals []any
	}
	tests := []struct {
		name     string
		filter   string
		list     []entry
		payload  string
		max      int
		want     Reason
		wantEval int
		wantArgs map[string]any
		wantErr  bool
	}{
		{
			name:     "numeric binding 42 matches payload 42.0",
			filter:   `event.payload.repository.id == parameters.repo_id`,
			list:     []entry{{"repo_id", []any{42}}},
			payload:  `{"repository":{"id":42.0}}`,
			want:     Matched,
			wantEval: 1,
			wantArgs: map[string]any{"repo_id": json.Number("42")},
		},
		{
			name:     "numeric binding as string does not equal a number",
			filter:   `event.payload.repository.id == parameters.repo_id`,
			list:     []entry{{"repo_id", []any{"42"}}},
			payload:  `{"repository":{"id":42}}`,
			want:     FilterFalse,
			wantEval: 1, // same canonical text: membership lets it through, the filter decides
		},
		{
			name:     "non-equality reference enumerates",
			filter:   `parameters.labels.exists(l, l == event.payload.label)`,
			list:     []entry{{"labels", []any{[]any{"bug"}, []any{"docs", "feature"}, []any{"x"}}}},
			payload:  `{"label":"feature"}`,
			want:     Matched,
			wantEval: 2, // newest first: ["x"], then ["docs","feature"]
			wantArgs: map[string]any{"labels": []any{"docs", "feature"}},
		},
		{
			name:     "comparison enumerates newest first",
			filter:   `event.payload.n > parameters.min`,
			list:     []entry{{"min", []any{1, 10, 100}}},
			payload:  `{"n":50}`,
			want:     Matched,
			wantEval: 2,
			wantArgs: map[string]any{"min": json.Number("10")},
		},
		{
			name:     "comparison false for all",
			filter:   `event.payload.n > parameters.min`,
			list:     []entry{{"min", []any{100, 200}}},
			payload:  `{"n":50}`,
			want:     FilterFalse,
			wantEval: 2,
		},
		{
			name:     "cap reached without match",
			filter:   `event.payload.n > parameters.min`,
			list:     []entry{{"min", []any{1, 100, 200, 300}}},
			payload:  `{"n":50}`,
			max:      3,
			want:     Capped,
			wantEval: 3,
		},
		{
			name:     "set exactly the cap size is exhausted",
			filter:   `event.payload.n > parameters.min`,
			list:     []entry{{"min", []any{100, 200, 300}}},
			payload:  `{"n":50}`,
			max:      3,
			want:     FilterFalse,
			wantEval: 3,
		},
		{
			name:     "match within cap",
			filter:   `event.payload.n > parameters.min`,
			list:     []entry{{"min", []any{100, 1, 200}}},
			payload:  `{"n":50}`,
			max:      2,
			want:     Matched,
			wantEval: 2,
			wantArgs: map[string]any{"min": json.Number("1")},
		},
		{
			name:     "cartesian product of two names",
			filter:   `event.payload.n > parameters.a && event.payload.n < parameters.b`,
			list:     []entry{{"a", []any{1, 60}}, {"b", []any{10, 100}}},
			payload:  `{"n":50}`,
			want:     Matched,
			wantEval: 2, // newest first, a fastest: (60,100) false, (1,100) true
			wantArgs: map[string]any{"a": json.Number("1"), "b": json.Number("100")},
		},
		{
			name:     "membership plus enumeration",
			filter:   `event.payload.repo == parameters.repo && event.payload.n > parameters.min`,
			list:     []entry{{"repo", []any{"a", "b"}}, {"min", []any{1, 100}}},
			payload:  `{"repo":"a","n":50}`,
			want:     Matched,
			wantEval: 2,
			wantArgs: map[string]any{"repo": "a", "min": json.Number("1")},
		},
		{
			name:    "conflicting conjuncts",
			filter:  `event.payload.a == parameters.x && event.payload.b == parameters.x`,
			list:    []entry{{"x", []any{"1", "2"}}},
			payload: `{"a":"1","b":"2"}`,
			want:    FilterFalse,
		},
		{
			name:     "agreeing conjuncts",
			filter:   `event.payload.a == parameters.x && event.payload.b == parameters.x`,
			list:     []entry{{"x", []any{"1", "2"}}},
			payload:  `{"a":"2","b":"2"}`,
			want:     Matched,
			wantEval: 1,
			wantArgs: map[string]any{"x": "2"},
		},
		{
			name:    "null conjunct",
			filter:  `event.payload.assignee == parameters.x`,
			list:    []entry{{"x", []any{"a", "b"}}},
			payload: `{"assignee":null}`,
			want:    FilterFalse,
		},
		{
			name:     "failed conjunct falls back to enumeration",
			filter:   `event.payload.missing.login == parameters.x && event.payload.n == 1`,
			list:     []entry{{"x", []any{"a", "b"}}},
			payload:  `{"n":2}`,
			want:     FilterFalse, // error && false is false
			wantEval: 2,
		},
		{
			name:     "every assignment errors",
			filter:   `int(event.payload.login) == parameters.x`,
			list:     []entry{{"x", []any{"a", "b"}}},
			payload:  `{"login":"octocat"}`,
			want:     FilterError,
			wantEval: 2,
			wantErr:  true,
		},
		{
			name:     "every assignment misses a payload field",
			filter:   `event.payload.missing.login == parameters.x`,
			list:     []entry{{"x", []any{"a", "b"}}},
			payload:  `{}`,
			want:     FilterFalse, // the payload lacks the field: quiet, with the field in Err
			wantEval: 2,
			wantErr:  true,
		},
		{
			name:     "a real error beats a missing field",
			filter:   `parameters.x == 'b' ? int(event.payload.login) == 1 : event.payload.missing == 1`,
			list:     []entry{{"x", []any{"a", "b"}}},
			payload:  `{"login":"octocat"}`,
			want:     FilterError,
			wantEval: 2,
			wantErr:  true,
		},
		{
			name:     "false beats error",
			filter:   `parameters.labels.exists(l, l == event.payload.label)`,
			list:     []entry{{"labels", []any{[]any{"bug"}, "not-a-list"}}},
			payload:  `{"label":"feature"}`,
			want:     FilterFalse,
			wantEval: 2,
			wantErr:  true,
		},
		{
			name:     "true beats error",
			filter:   `parameters.labels.exists(l, l == event.payload.label)`,
			list:     []entry{{"labels", []any{[]any{"feature"}, "not-a-list"}}},
			payload:  `{"label":"feature"}`,
			want:     Matched,
			wantEval: 2,
			wantArgs: map[string]any{"labels": []any{"feature"}},
			wantErr:  true,
		},
		{
			name:     "empty set of one of two names",
			filter:   `event.payload.n > parameters.a && parameters.b == "x"`,
			list:     []entry{{"a", []any{1}}},
			payload:  `{"n":2}`,
			want:     EmptyAllowList,
			wantEval: 0,
		},
		{
			name:     "no references evaluates once",
			filter:   `event.payload.ok == true`,
			list:     []entry{{"a", []any{1}}},
			payload:  `{"ok":true}`,
			want:     Matched,
			wantEval: 1,
			wantArgs: map[string]any{},
		},
		{
			name:     "dynamic reference sees newest value of each name",
			filter:   `parameters[event.payload.key] == "y"`,
			list:     []entry{{"a", []any{"x", "y"}}, {"b", []any{"z"}}},
			payload:  `{"key":"a"}`,
			want:     Matched,
			wantEval: 1,
			wantArgs: map[string]any{"a": "y", "b": "z"},
		},
		{
			name:     "dynamic reference with static one enumerates the static one",
			filter:   `parameters[event.payload.key] == "z" && event.payload.n > parameters.a`,
			list:     []entry{{"a", []any{1, 100}}, {"b", []any{"z"}}},
			payload:  `{"key":"b","n":50}`,
			want:     Matched,
			wantEval: 2,
			wantArgs: map[string]any{"a": json.Number("1"), "b": "z"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := compileFilter(t, tt.filter)
			l := New(0)
			for _, e := range tt.list {
				for _, v := range e.vals {
					l.Add(e.name, v)
				}
			}
			ctx := context.Background()
			out := l.Match(ctx, f.Prepare(ctx, eventVars(t, tt.payload)), tt.max)
			if out.Reason != tt.want || out.Evaluations != tt.wantEval || !reflect.DeepEqual(out.Parameters, tt.wantArgs) {
				t.Errorf("Match = %+v; want reason %s, %d evaluations, parameters %v", out, tt.want, tt.wantEval, tt.wantArgs)
			}
			if (out.Err != nil) != tt.wantErr {
				t.Errorf("Match error = %v, want error %v", out.Err, tt.wantErr)
			}
		})
	}
}

func TestPrepareKeys(t *testing.T) {
	t.Parallel()
	f := compileFilter(t, `event.payload.id == parameters.id && parameters.repo == event.payload.repo && event.payload.x.y == parameters.z && event.payload.a == parameters.a`)
	d := f.Prepare(context.Background(), eventVars(t, `{"id":42.0,"repo":"octo/tool","a":null}`))
	keys := d.Keys(context.Background())
	want := []Key{{Param: "id", Text: "42"}, {Param: "repo", Text: "octo/tool"}, {Param: "z"}, {Param: "a", Null: true}}
	if len(keys) != len(want) {
		t.Fatalf("Keys() = %+v, want %d keys", keys, len(want))
	}
	for i, k := range keys {
		if k.Param != want[i].Param || k.Text != want[i].Text || k.Null != want[i].Null || (k.Err != nil) != (i == 2) {
			t.Errorf("key %d = %+v, want %+v (error only for z)", i, k, want[i])
		}
	}
}

// TestPrepareSetsNow checks that conjuncts and the filter see one `now` when the caller gives none.
func TestPrepareSetsNow(t *testing.T) {
	t.Parallel()
	f := compileFilter(t, `now == parameters.t`)
	vars := eventVars(t, `{}`)
	delete(vars, "now")
	d := f.Prepare(context.Background(), vars)
	l := New(0)
	l.Add("t", d.Keys(context.Background())[0].Text)
	if out := l.Match(context.Background(), d, 0); out.Reason != Matched {
		t.Errorf("Match = %+v, want matched", out)
	}
	if _, ok := vars["now"]; ok {
		t.Error("Prepare modified vars")
	}
}

func TestMatchCancelled(t *testing.T) {
	t.Parallel()
	f := compileFilter(t, `event.payload.n > parameters.min`)
	l := New(0)
	for i := range 10 {
		l.Add("min", 100+i)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := f.Prepare(ctx, eventVars(t, `{"n":1}`))
	cancel()
	out := l.Match(ctx, d, 0)
	if out.Reason != FilterError || !errors.Is(out.Err, context.Canceled) || out.Evaluations != 0 {
		t.Errorf("Match = %+v; want filter_error wrapping context.Canceled after 0 evaluations", out)
	}
}

// TestMatchConcurrent adds values from several goroutines while others match; run with -race.
func TestMatchConcurrent(t *testing.T) {
	t.Parallel()
	f := compileFilter(t, walkthrough)
	l := New(0) // 4×200 values fit: none is evicted before its delivery
	l.Seal("repo", "tool")
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				login := fmt.Sprintf("user%d-%d", w, i)
				l.AddAll(map[string]any{"assignee": login, "repo": "other"})
				// A value added before the delivery is always seen.
				if out := l.Match(ctx, f.Prepare(ctx, eventVars(t, assigned(login, "tool"))), 0); out.Reason != Matched {
					t.Errorf("Match(%s) = %+v, want matched", login, out)
					return
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for range 200 {
				_ = l.Snapshot()
				if _, err := json.Marshal(l); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := l.Len("assignee"); got != 800 {
		t.Errorf("Len(assignee) = %d, want 800", got)
	}
	if !reflect.DeepEqual(l.Snapshot()["repo"], []string{"tool"}) {
		t.Errorf("sealed repo = %q, want [tool]", l.Snapshot()["repo"])
	}
}

// A payload its filter's opening test refuses (celenv.Program.FalseFor) is FilterFalse with no evaluation, once
// the list holds the names the filter reads; an empty name still says EmptyAllowList first, and a payload the
// test cannot refuse is evaluated as before.
func TestMatchRefuted(t *testing.T) {
	t.Parallel()
	f := compileFilter(t, `event.payload.action == 'assigned' && `+walkthrough)
	ctx := context.Background()
	withAction := func(action string) string {
		return `{"action":` + action + `,` + assigned("alice", "tool")[1:]
	}
	l := New(0)
	l.Seal("repo", "tool")
	d := f.Prepare(ctx, eventVars(t, withAction(`"unassigned"`)))
	if !d.Refuted() {
		t.Fatal("Refuted() = false for an unassigned payload")
	}
	if out := l.Match(ctx, d, 0); out.Reason != EmptyAllowList || out.Name != "assignee" {
		t.Errorf("before any assignee: %+v, want EmptyAllowList of assignee", out)
	}
	l.Add("assignee", "alice")
	l.Add("assignee", "bob") // two values: Match would evaluate the conjuncts first
	if out := l.Match(ctx, d, 0); out.Reason != FilterFalse || out.Evaluations != 0 || out.Err != nil {
		t.Errorf("refuted: %+v, want FilterFalse after 0 evaluations", out)
	}
	for _, action := range []string{`"assigned"`, `null`} {
		d := f.Prepare(ctx, eventVars(t, withAction(action)))
		if d.Refuted() {
			t.Errorf("action %s: Refuted() = true", action)
		}
		want := Matched
		if action == `null` {
			want = FilterFalse
		}
		if out := l.Match(ctx, d, 0); out.Reason != want || out.Evaluations != 1 {
			t.Errorf("action %s: %+v, want %s after 1 evaluation", action, out, want)
		}
	}
}
