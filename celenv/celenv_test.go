package celenv_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/commonagents-go/tool/celenv"
)

// prFilter is the github-pr example's receive filter.
const prFilter = `event.payload.action == 'created' && has(event.payload.issue.pull_request) && ` +
	`event.payload.repository.owner.login == parameters.owner && event.payload.repository.name == parameters.repo`

// decode decodes JSON the way hosts decode payloads: numbers as json.Number.
func decode(t testing.TB, src string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(src))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", src, err)
	}
	return v
}

func compile(t testing.TB, s celenv.Scope, expr string) *celenv.Program {
	t.Helper()
	p, err := celenv.Compile(s, expr, celenv.Limits{})
	if err != nil {
		t.Fatalf("Compile(%s, %q): %v", s, expr, err)
	}
	return p
}

func TestScope(t *testing.T) {
	t.Parallel()
	tests := []struct {
		scope celenv.Scope
		name  string
		vars  []string
	}{
		{celenv.ScopeAction, "action", []string{"context", "c", "input", "i", "now", "runtime"}},
		{celenv.ScopeFilter, "filter", []string{"event", "parameters", "now"}},
		{celenv.ScopeDetect, "detect", []string{"response", "poll", "parameters", "now"}},
		{celenv.ScopeExtract, "extract", []string{"event"}},
		{celenv.ScopePollExtract, "poll_extract", []string{"event", "item"}},
		{celenv.ScopeBinding, "binding", []string{"context", "c", "runtime", "now"}},
		{celenv.Scope(42), "Scope(42)", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.scope.String(); got != tt.name {
				t.Errorf("String() = %q, want %q", got, tt.name)
			}
			if got := tt.scope.Variables(); !slices.Equal(got, tt.vars) {
				t.Errorf("Variables() = %q, want %q", got, tt.vars)
			}
		})
	}
}

func TestEnv(t *testing.T) {
	t.Parallel()
	a, err := celenv.Env(celenv.ScopeFilter)
	if err != nil {
		t.Fatal(err)
	}
	b, err := celenv.Env(celenv.ScopeFilter)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Error("Env built the filter environment twice")
	}
	if _, err := celenv.Env(celenv.Scope(-1)); err == nil {
		t.Error("Env(-1) succeeded, want an error")
	}
}

func TestCompileSpecExpressions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		scope celenv.Scope
		expr  string
	}{
		{celenv.ScopeFilter, prFilter},
		{celenv.ScopeFilter, `event.headers['x-github-event'] == 'issue_comment' && event.name == 'comment'`},
		{celenv.ScopeFilter, `timestamp(event.payload.created_at) > timestamp(now) - duration('1h')`},
		{celenv.ScopeFilter, `event.payload.?issue.?labels.orValue([]).exists(l, l.name == 'bug')`},
		{celenv.ScopeFilter, `sets.contains(event.payload.tags, ['a']) && event.payload.title.lowerAscii().contains('x')`},
		{celenv.ScopeFilter, `math.greatest([event.payload.count, 2]) > 3 && base64.encode(b'x') == 'eA=='`},
		{celenv.ScopeDetect, `response.items.filter(i, i.published_at > poll.last_fetched_at)`},
		{celenv.ScopeDetect, `response.items.filter(i, i.owner == parameters.owner).slice(0, 1)`},
		{celenv.ScopeAction, `{'date': now, 'namespace': context.agent.namespace}`},
		{celenv.ScopeAction, `{'sum': i.a + input.b, 'by': c.agent.name, 'v': runtime.version}`},
		{celenv.ScopeAction, `mount.write('notes/' + input.name, input.text) + mount.read('index.md')`},
		{celenv.ScopeExtract, `string(event.payload.issue.number)`},
		{celenv.ScopeExtract, `event.payload.comment.user.login`},
		{celenv.ScopePollExtract, `item.title`},
		{celenv.ScopePollExtract, `event.payload.link`},
		{celenv.ScopeBinding, `context.agent.namespace + '/' + c.agent.name`},
		{celenv.ScopeBinding, `runtime.api_root`},
	}
	for _, tt := range tests {
		t.Run(tt.scope.String()+"/"+tt.expr, func(t *testing.T) {
			t.Parallel()
			p := compile(t, tt.scope, tt.expr)
			if p.Source() != tt.expr || p.Scope() != tt.scope {
				t.Errorf("Source, Scope = %q, %v; want %q, %v", p.Source(), p.Scope(), tt.expr, tt.scope)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		scope celenv.Scope
		expr  string
		lim   celenv.Limits
		want  []string // substrings of the error
	}{
		{"input in filter", celenv.ScopeFilter, `input.x == 1`, celenv.Limits{}, []string{"undeclared reference to 'input'", "1:1"}},
		{"event in action", celenv.ScopeAction, `event.name`, celenv.Limits{}, []string{"undeclared reference to 'event'"}},
		{"parameters in extract", celenv.ScopeExtract, `parameters.x`, celenv.Limits{}, []string{"undeclared reference to 'parameters'"}},
		{"item in extract", celenv.ScopeExtract, `item.title`, celenv.Limits{}, []string{"undeclared reference to 'item'"}},
		{"c in filter", celenv.ScopeFilter, `c.agent == 1`, celenv.Limits{}, []string{"undeclared reference to 'c'"}},
		{"mount outside action", celenv.ScopeBinding, `mount.read('x')`, celenv.Limits{}, []string{"undeclared reference to 'mount'"}},
		{"mount wrong arity", celenv.ScopeAction, `mount.read('x', 'y')`, celenv.Limits{}, []string{"mount.read"}},
		{"syntax position", celenv.ScopeFilter, "event.name == 'a' &&\n  event.payload.x ===", celenv.Limits{}, []string{"Syntax error", "2:21"}},
		{"filter not bool", celenv.ScopeFilter, `'x'`, celenv.Limits{}, []string{"filter", "bool", "string"}},
		{"detect not list", celenv.ScopeDetect, `1`, celenv.Limits{}, []string{"detect", "list", "int"}},
		{"too long", celenv.ScopeFilter, `event.name == '` + strings.Repeat("x", 100) + `'`, celenv.Limits{MaxLength: 64}, []string{"limit of 64"}},
		{"too long default", celenv.ScopeFilter, `event.name == '` + strings.Repeat("x", celenv.DefaultMaxLength) + `'`, celenv.Limits{}, []string{"limit of 16384"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := celenv.Compile(tt.scope, tt.expr, tt.lim)
			if p != nil || err == nil {
				t.Fatalf("Compile(%q) = %v, %v; want an error", tt.expr, p, err)
			}
			var ce *celenv.CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not a *CompileError: %v", err, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestEval(t *testing.T) {
	t.Parallel()
	pr := decode(t, `{"action": "created", "issue": {"number": 42, "pull_request": {"url": "u"}},
		"repository": {"id": 42, "name": "tool", "owner": {"login": "octo"}}, "count": 5, "ratio": 0.5, "missing": null}`)
	event := map[string]any{"payload": pr, "name": "comment", "headers": map[string]any{"x-github-event": "issue_comment"}}
	params := map[string]any{"owner": "octo", "repo": "tool"}
	tests := []struct {
		name  string
		scope celenv.Scope
		expr  string
		vars  map[string]any
		want  any
	}{
		{"pr filter true", celenv.ScopeFilter, prFilter, map[string]any{"event": event, "parameters": params}, true},
		{"pr filter other repo", celenv.ScopeFilter, prFilter,
			map[string]any{"event": event, "parameters": map[string]any{"owner": "octo", "repo": "other"}}, false},
		{"pr filter no pull_request", celenv.ScopeFilter, prFilter, map[string]any{"event": map[string]any{"payload": decode(t,
			`{"action": "created", "issue": {"number": 1}, "repository": {"name": "tool", "owner": {"login": "octo"}}}`)},
			"parameters": params}, false},
		{"json.Number == int64", celenv.ScopeFilter, `event.payload.repository.id == parameters.repo_id`,
			map[string]any{"event": event, "parameters": map[string]any{"repo_id": int64(42)}}, true},
		{"json.Number == float64", celenv.ScopeFilter, `event.payload.repository.id == parameters.repo_id`,
			map[string]any{"event": event, "parameters": map[string]any{"repo_id": 42.0}}, true},
		{"json.Number == json.Number", celenv.ScopeFilter, `event.payload.repository.id == parameters.repo_id`,
			map[string]any{"event": event, "parameters": map[string]any{"repo_id": json.Number("42")}}, true},
		{"float64 == int64", celenv.ScopeFilter, `event.payload.repository.id == parameters.repo_id`,
			map[string]any{"event": map[string]any{"payload": map[string]any{"repository": map[string]any{"id": 42.0}}},
				"parameters": map[string]any{"repo_id": int64(42)}}, true},
		{"number mismatch", celenv.ScopeFilter, `event.payload.repository.id == parameters.repo_id`,
			map[string]any{"event": event, "parameters": map[string]any{"repo_id": 43.0}}, false},
		{"json.Number > 3", celenv.ScopeFilter, `event.payload.count > 3 && event.payload.ratio < 1`, map[string]any{"event": event}, true},
		{"float64 > 3", celenv.ScopeFilter, `event.payload.count > 3`, map[string]any{"event": map[string]any{"payload": map[string]any{"count": 5.0}}}, true},
		{"headers", celenv.ScopeFilter, `event.headers['x-github-event'] == 'issue_comment' && event.name == 'comment'`,
			map[string]any{"event": event}, true},
		{"has on map key", celenv.ScopeFilter, `has(event.payload.issue) && !has(event.payload.nope)`, map[string]any{"event": event}, true},
		{"optional chain", celenv.ScopeExtract, `event.payload.?nope.?deeper.orValue('none')`, map[string]any{"event": event}, "none"},
		{"extract number", celenv.ScopeExtract, `string(event.payload.issue.number)`, map[string]any{"event": event}, "42"},
		{"extract float", celenv.ScopeExtract, `string(event.payload.ratio)`, map[string]any{"event": event}, "0.5"},
		{"poll item", celenv.ScopePollExtract, `item.title + ' ' + event.payload.link`,
			map[string]any{"item": map[string]any{"title": "t"}, "event": map[string]any{"payload": map[string]any{"link": "l"}}}, "t l"},
		{"detect", celenv.ScopeDetect, `response.items.filter(i, i.published_at > poll.last_fetched_at)`,
			map[string]any{"response": decode(t, `{"items": [{"id": 1, "published_at": "2026-05-20T03:00:00Z"},
				{"id": 2, "published_at": "2026-05-20T04:00:00Z"}]}`), "poll": map[string]any{"last_fetched_at": "2026-05-20T03:45:00Z"}},
			[]any{map[string]any{"id": int64(2), "published_at": "2026-05-20T04:00:00Z"}}},
		{"detect on text response", celenv.ScopeDetect, `response.split('\n')`, map[string]any{"response": "a\nb"}, []any{"a", "b"}},
		{"action with now", celenv.ScopeAction, `{'date': now, 'namespace': context.agent.namespace}`,
			map[string]any{"now": "2026-05-20T03:45:00Z", "context": map[string]any{"agent": map[string]any{"namespace": "ns"}}},
			map[string]any{"date": "2026-05-20T03:45:00Z", "namespace": "ns"}},
		{"aliases default", celenv.ScopeAction, `[c.a, i.b, input.b, runtime.version]`,
			map[string]any{"context": map[string]any{"a": 1}, "input": map[string]any{"b": "x"}, "runtime": map[string]any{"version": "v1"}},
			[]any{int64(1), "x", "x", "v1"}},
		{"aliases explicit", celenv.ScopeAction, `c.a`,
			map[string]any{"context": map[string]any{"a": 1}, "c": map[string]any{"a": 2}}, int64(2)},
		{"now as timestamp", celenv.ScopeAction, `timestamp(now).getHours()`, map[string]any{"now": "2026-05-20T03:45:00Z"}, int64(3)},
		{"null stays nil", celenv.ScopeAction, `{'a': null, 'b': input.missing}`, map[string]any{"input": pr},
			map[string]any{"a": nil, "b": nil}},
		{"ints stay int64", celenv.ScopeAction, `[1, -2, 3u, input.count, input.count * 2, input.ratio, 2.0]`,
			map[string]any{"input": pr}, []any{int64(1), int64(-2), int64(3), int64(5), int64(10), 0.5, 2.0}},
		{"big uint", celenv.ScopeAction, `18446744073709551615u`, nil, float64(math.MaxUint64)},
		{"nested maps", celenv.ScopeAction, `{'repo': input.repository, 'n': {'k': [input.issue.number]}, 1: 'one'}`,
			map[string]any{"input": pr}, map[string]any{
				"repo": map[string]any{"id": int64(42), "name": "tool", "owner": map[string]any{"login": "octo"}},
				"n":    map[string]any{"k": []any{int64(42)}}, "1": "one"}},
		{"bytes base64", celenv.ScopeAction, `b'hi'`, nil, "aGk="},
		{"timestamp text", celenv.ScopeAction, `timestamp('2026-05-20T03:45:00+02:00')`, nil, "2026-05-20T01:45:00Z"},
		{"duration text", celenv.ScopeAction, `duration('1m30s')`, nil, "90s"},
		{"optional none", celenv.ScopeAction, `optional.none()`, nil, nil},
		{"optional of", celenv.ScopeAction, `optional.of(3)`, nil, int64(3)},
		{"strings ext", celenv.ScopeAction, `'a,b'.split(',').join('-').upperAscii()`, nil, "A-B"},
		{"lists ext", celenv.ScopeAction, `lists.range(3).reverse()`, nil, []any{int64(2), int64(1), int64(0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := compile(t, tt.scope, tt.expr)
			got, err := p.Eval(context.Background(), tt.vars)
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Eval = %#v, want %#v", got, tt.want)
			}
			if b, ok := tt.want.(bool); ok {
				got, err := p.EvalBool(context.Background(), tt.vars)
				if err != nil || got != b {
					t.Errorf("EvalBool = %v, %v; want %v", got, err, b)
				}
			}
		})
	}
}

func TestEvalDefaultNow(t *testing.T) {
	t.Parallel()
	p := compile(t, celenv.ScopeAction, `[now, now]`)
	before := time.Now().UTC().Truncate(time.Second)
	got, err := p.Eval(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now().UTC()
	list := got.([]any)
	s := list[0].(string)
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`).MatchString(s) {
		t.Fatalf("now = %q, want RFC 3339 UTC with second precision", s)
	}
	ts, _ := time.Parse(time.RFC3339, s)
	if ts.Before(before) || ts.After(after) || list[1] != s {
		t.Errorf("now = %v, want one value within [%v, %v]", list, before, after)
	}
}

func TestEvalErrors(t *testing.T) {
	t.Parallel()
	payload := map[string]any{"k": "s3cr3t-value", "m": map[string]any{}, "n": 1.5}
	vars := map[string]any{"event": map[string]any{"payload": payload}, "input": payload}
	tests := []struct {
		name   string
		scope  celenv.Scope
		expr   string
		bool   bool
		want   []string // substrings of the message
		is     error
		line   int
		column int
	}{
		{"missing key", celenv.ScopeExtract, `event.payload.nope`, false, []string{"no such key: nope"}, nil, 1, 14},
		{"missing key line 2", celenv.ScopeExtract, "'a' +\n  event.payload.nope", false, []string{"no such key: nope"}, nil, 2, 16},
		{"missing variable", celenv.ScopeAction, `runtime.version`, false, []string{"no such attribute"}, nil, 1, 8},
		{"dynamic key not echoed", celenv.ScopeExtract, `event.payload.m[event.payload.k]`, false, []string{"no such key: …"}, nil, 1, 16},
		{"conversion not echoed", celenv.ScopeExtract, `int(event.payload.k)`, false, []string{"type conversion error from 'string' to 'int'"}, nil, 1, 4},
		{"type result", celenv.ScopeAction, `type(1)`, false, []string{"not representable as JSON", "type"}, celenv.ErrNotJSON, 0, 0},
		{"NaN result", celenv.ScopeAction, `0.0 / 0.0`, false, []string{"not representable as JSON"}, celenv.ErrNotJSON, 0, 0},
		{"bool map key", celenv.ScopeAction, `{true: 1}`, false, []string{"map key of type bool"}, celenv.ErrNotJSON, 0, 0},
		{"not bool", celenv.ScopeFilter, `event.payload.k`, true, []string{"yielded string, want bool"}, nil, 0, 0},
		{"filter error", celenv.ScopeFilter, `event.payload.n + 1 > 0`, true, []string{"no such overload"}, nil, 1, 17},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := compile(t, tt.scope, tt.expr)
			var err error
			if tt.bool {
				_, err = p.EvalBool(context.Background(), vars)
			} else {
				var got any
				got, err = p.Eval(context.Background(), vars)
				if got != nil {
					t.Errorf("Eval returned %v with the error", got)
				}
			}
			var ee *celenv.EvalError
			if !errors.As(err, &ee) {
				t.Fatalf("error %T is not an *EvalError: %v", err, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error %q leaks a variable value", err)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.is)
			}
			if ee.Line != tt.line || ee.Column != tt.column {
				t.Errorf("position = %d:%d, want %d:%d", ee.Line, ee.Column, tt.line, tt.column)
			}
		})
	}
}

// blowup makes 10^6 innermost iterations from a 10-element list.
const blowup = `[0,1,2,3,4,5,6,7,8,9].map(a, [0,1,2,3,4,5,6,7,8,9].map(b, [0,1,2,3,4,5,6,7,8,9].map(c, ` +
	`[0,1,2,3,4,5,6,7,8,9].map(d, [0,1,2,3,4,5,6,7,8,9].map(e, [0,1,2,3,4,5,6,7,8,9].map(f, a+b+c+d+e+f))))))`

func TestCostLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		expr string
		lim  celenv.Limits
		ok   bool
	}{
		{"default stops blowup", blowup, celenv.Limits{}, false},
		{"string blowup", `lists.range(1000).map(i, lists.range(1000).map(j, 'xxxxxxxx').join()).join().size()`, celenv.Limits{}, false},
		{"small limit", `[1, 2, 3].map(x, x * 2)`, celenv.Limits{Cost: 3}, false},
		{"under limit", `[1, 2, 3].map(x, x * 2)`, celenv.Limits{Cost: 1000}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := celenv.Compile(celenv.ScopeAction, tt.expr, tt.lim)
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Eval(context.Background(), nil)
			if tt.ok {
				if err != nil {
					t.Fatalf("Eval: %v", err)
				}
				return
			}
			if !errors.Is(err, celenv.ErrCostLimit) {
				t.Fatalf("Eval error = %v, want ErrCostLimit", err)
			}
		})
	}
}

func TestContextDeadline(t *testing.T) {
	t.Parallel()
	p, err := celenv.Compile(celenv.ScopeAction, blowup, celenv.Limits{Cost: math.MaxUint64})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		is   error
	}{
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 20*time.Millisecond)
		}, context.DeadlineExceeded},
		{"cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := tt.ctx()
			defer cancel()
			start := time.Now()
			_, err := p.Eval(ctx, nil)
			if !errors.Is(err, tt.is) {
				t.Fatalf("Eval error = %v, want %v", err, tt.is)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("Eval took %v after its context ended", d)
			}
		})
	}
}

func TestConcurrentEval(t *testing.T) {
	t.Parallel()
	p := compile(t, celenv.ScopeFilter, prFilter)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			repo := []string{"tool", "other"}[g%2]
			vars := map[string]any{"event": map[string]any{"payload": decode(t,
				`{"action": "created", "issue": {"pull_request": {}}, "repository": {"name": "tool", "owner": {"login": "octo"}}}`)},
				"parameters": map[string]any{"owner": "octo", "repo": repo}}
			for range 100 {
				got, err := p.EvalBool(context.Background(), vars)
				if err != nil || got != (repo == "tool") {
					t.Errorf("EvalBool(repo %s) = %v, %v", repo, got, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestEvalBinding(t *testing.T) {
	t.Parallel()
	vars := map[string]any{
		"context": map[string]any{"agent": map[string]any{"name": "bot", "namespace": "team"}},
		"runtime": map[string]any{"version": "1.2"},
		"now":     "2026-05-20T03:45:00Z",
	}
	tests := []struct {
		src     string
		want    any
		wantErr bool
	}{
		{src: `octocat`, want: "octocat"},
		{src: `my-repo`, want: "my-repo"},
		{src: `hello world`, want: "hello world"},
		{src: `input.x`, want: "input.x"},
		{src: `42`, want: int64(42)},
		{src: `'quoted'`, want: "quoted"},
		{src: `context.agent.namespace + '/' + c.agent.name`, want: "team/bot"},
		{src: `runtime.version`, want: "1.2"},
		{src: `now`, want: "2026-05-20T03:45:00Z"},
		{src: `context.agent.missing`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			got, err := celenv.EvalBinding(context.Background(), tt.src, vars)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("EvalBinding = %v, want an error", got)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("EvalBinding = %#v, %v; want %#v", got, err, tt.want)
			}
		})
	}
}
