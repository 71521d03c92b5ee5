package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/runtime"
	"github.com/commonagents-go/tool/tooltest"
	"github.com/mark3labs/mcp-go/mcp"
)

// factRecorder records the facts a task reports.
type factRecorder struct {
	mu    sync.Mutex
	facts []tool.Fact
}

func (r *factRecorder) Observe(_ context.Context, f tool.Fact) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.facts = append(r.facts, f)
}

func (r *factRecorder) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, f := range r.facts {
		out = append(out, f.Name)
	}
	return out
}

func (r *factRecorder) all() []tool.Fact {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]tool.Fact(nil), r.facts...)
}

func newTask(t *testing.T, tl *tool.Tool, cfg tool.TaskConfig) *tool.Task {
	t.Helper()
	task, err := tl.NewTask(context.Background(), cfg)
	if err != nil {
		t.Fatalf("NewTask: %v", err)
	}
	t.Cleanup(func() {
		if err := task.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return task
}

func mustInvoke(t *testing.T, task *tool.Task, action string, args map[string]any) *tool.Result {
	t.Helper()
	res, err := task.Invoke(context.Background(), action, args)
	if err != nil {
		t.Fatalf("Invoke(%s): %v", action, err)
	}
	return res
}

// calcContext is the task context calcManifest's actions read.
var calcContext = map[string]any{"team": "core"}

const calcManifest = `kind: commonagents.info/v1beta2/tool
namespace: tests
name: calc
description: Arithmetic.
parameters:
  properties:
    owner:
      type: string
      require_binding: true
actions:
  - name: add
    description: Adds two numbers.
    parameters:
      properties:
        a: {type: integer}
        b: {type: integer, default: 10}
    execute:
      cel:
        expression: "int(input.a) + int(input.b)"
  - name: whoami
    description: Says who owns the task.
    execute:
      cel:
        expression: "input.owner + '@' + context.team"
  - name: fail
    description: Fails at run time.
    execute:
      cel:
        expression: "1 / (size(context.team) - size(context.team))"
`

func TestInvokeCEL(t *testing.T) {
	t.Parallel()
	tl := mustLoadSrc(t, calcManifest)
	task := newTask(t, tl, tool.TaskConfig{
		Capability: tool.Capability{Bindings: map[string]any{"owner": "octo"}},
		Context:    map[string]any{"team": "core"},
	})

	res := mustInvoke(t, task, "add", map[string]any{"a": 2})
	if res.IsError || res.Output != int64(12) || string(res.OutputJSON) != "12" || res.OutputBytes != 2 {
		t.Fatalf("add(a=2) = %+v (output %#v), want 12 with default b=10", res, res.Output)
	}
	if res.Action != "add" || res.Function != "calc_add" || res.CallID == "" || res.Telemetry.Backend != "cel" {
		t.Errorf("result identity = %q %q %q %q", res.Action, res.Function, res.CallID, res.Telemetry.Backend)
	}

	// The bound owner wins over the LLM's value, which is noted in telemetry.
	res = mustInvoke(t, task, "whoami", map[string]any{"owner": "mallory"})
	if res.Output != "octo@core" {
		t.Errorf("whoami = %v, want octo@core", res.Output)
	}
	if !reflect.DeepEqual(res.Telemetry.IgnoredArguments, []string{"owner"}) {
		t.Errorf("IgnoredArguments = %v", res.Telemetry.IgnoredArguments)
	}

	res = mustInvoke(t, task, "fail", nil)
	if !res.IsError || res.Error.Kind != runtime.KindToolError {
		t.Errorf("fail = %+v, want a recoverable tool_error", res)
	}

	fres, err := task.InvokeFunction(context.Background(), "calc_add", []byte(`{"a": 5, "b": 1}`))
	if err != nil || fres.Output != int64(6) || fres.Function != "calc_add" {
		t.Errorf("InvokeFunction = %+v, %v; want 6", fres, err)
	}
	// A hallucinated function name is the LLM's mistake: a result listing what it can call.
	fres, err = task.InvokeFunction(tool.ContextWithCallID(context.Background(), "c9"), "calc_nope", []byte(`{"a": 1}`))
	if err != nil || !fres.IsError || fres.Error.Kind != runtime.KindUnknownFunction || fres.Function != "calc_nope" ||
		fres.Action != "" || fres.CallID != "c9" {
		t.Fatalf("unknown function = %+v, %v; want a recoverable unknown_function result", fres, err)
	}
	var out struct {
		Error struct {
			Kind string
			Hint struct{ Functions []string }
		}
	}
	if err := json.Unmarshal(fres.OutputJSON, &out); err != nil || out.Error.Kind != "unknown_function" ||
		!reflect.DeepEqual(out.Error.Hint.Functions, []string{"calc_add", "calc_whoami", "calc_fail"}) {
		t.Errorf("unknown function output = %s, want the callable functions listed", fres.OutputJSON)
	}
	if _, err := task.Invoke(context.Background(), "nope", nil); !errors.Is(err, tool.ErrUnknownAction) {
		t.Errorf("unknown action: err = %v, want ErrUnknownAction", err)
	}
	fres, err = task.InvokeFunction(context.Background(), "calc_add", []byte(`[1,2]`))
	if err != nil || !fres.IsError || fres.Error.Kind != runtime.KindInvalidArguments {
		t.Errorf("array arguments = %+v, %v; want invalid_arguments", fres, err)
	}
}

func TestInvokeArgumentErrors(t *testing.T) {
	t.Parallel()
	src := manifestHeader("args") + `settings:
  properties:
    api_key: {type: string, format: password}
parameters:
  properties:
    region: {type: string, enum: [eu, us]}
actions:
  - name: put
    description: Stores a value.
    parameters:
      properties:
        key: {type: string, minLength: 2}
        value: {type: integer, maximum: 100}
        note: {type: string, default: ""}
    execute:
      cel:
        expression: "input"
`
	tl := mustLoadSrc(t, src, tool.WithSettings(map[string]any{"api_key": "sk-live-SECRET"}))
	task := newTask(t, tl, tool.TaskConfig{})
	tests := []struct {
		name     string
		args     map[string]any
		kind     string
		contains []string
		missing  []string
	}{
		{name: "missing", args: map[string]any{"region": "eu"}, kind: runtime.KindMissingFields,
			contains: []string{`"key"`, `"value"`}, missing: []string{"key", "value"}},
		{name: "unknown", args: map[string]any{"region": "eu", "key": "ab", "value": 1, "colour": "red"},
			kind: runtime.KindInvalidArguments, contains: []string{`unknown arguments "colour"`}},
		{name: "setting", args: map[string]any{"region": "eu", "key": "ab", "value": 1, "api_key": "x"},
			kind: runtime.KindInvalidArguments, contains: []string{`"api_key" cannot be passed`}},
		{name: "schema", args: map[string]any{"region": "mars", "key": "a", "value": 1000},
			kind: runtime.KindInvalidArguments, contains: []string{"key: ", "region: must be one of", "value: must be less than or equal to 100"}},
		{name: "type", args: map[string]any{"region": "eu", "key": "ab", "value": "ten"},
			kind: runtime.KindInvalidArguments, contains: []string{"value: must be of type integer"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := mustInvoke(t, task, "put", tc.args)
			if !res.IsError || res.Error.Kind != tc.kind {
				t.Fatalf("result = %+v, want kind %s", res, tc.kind)
			}
			for _, want := range tc.contains {
				if !strings.Contains(res.Error.Message, want) {
					t.Errorf("message %q lacks %q", res.Error.Message, want)
				}
			}
			if tc.missing != nil {
				h := res.Error.Hint
				if h == nil || !reflect.DeepEqual(h.MissingFields, tc.missing) || len(h.Schemas) != len(tc.missing) {
					t.Fatalf("hint = %+v, want missing %v with schemas", h, tc.missing)
				}
				if !strings.Contains(string(h.Schemas["value"]), `"maximum":100`) {
					t.Errorf("schema of value = %s", h.Schemas["value"])
				}
			}
			var out map[string]any
			if err := json.Unmarshal(res.OutputJSON, &out); err != nil || out["error"] == nil {
				t.Errorf("OutputJSON = %s, want the error as an object", res.OutputJSON)
			}
			if strings.Contains(string(res.OutputJSON), "sk-live-SECRET") {
				t.Errorf("secret in output: %s", res.OutputJSON)
			}
		})
	}
	res := mustInvoke(t, task, "put", map[string]any{"region": "us", "key": "ab", "value": json.Number("7")})
	want := map[string]any{"region": "us", "key": "ab", "value": int64(7), "note": ""}
	if res.IsError || !reflect.DeepEqual(res.Output, want) {
		t.Errorf("valid call = %+v, want output %v", res.Output, want)
	}
}

func TestNewTaskBindings(t *testing.T) {
	t.Parallel()
	src := manifestHeader("bind") + `parameters:
  properties:
    owner: {type: string, require_binding: true}
    repo: {type: string, require_binding: true}
actions:
  - name: act
    description: Acts.
    parameters:
      properties:
        limit: {type: integer, maximum: 5, default: 1}
    execute:
      cel:
        expression: "'ok'"
events:
  - name: opened
    description: Something opened.
    message: "opened"
    parameters:
      properties:
        label: {type: string, require_binding: true}
    receive:
      webhook:
        filter: "event.payload.label == parameters.label"
`
	tl := mustLoadSrc(t, src)
	_, err := tl.NewTask(context.Background(), tool.TaskConfig{Capability: tool.Capability{
		Bindings: map[string]any{"owner": 42, "limit": 9, "colour": "red"}}})
	var ve *tool.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("NewTask error = %v, want *ValidationError", err)
	}
	if !strings.HasPrefix(err.Error(), "tool: invalid bindings: ") {
		t.Errorf("error %q does not say the bindings are invalid", err)
	}
	var got []string
	for _, p := range ve.Problems {
		got = append(got, p.Type+" "+p.Path)
	}
	want := []string{"invalid bindings.colour", "invalid bindings.limit", "required bindings.label",
		"invalid bindings.owner", "required bindings.repo"}
	sort.Strings(got)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems = %v\nwant %v\n%v", got, want, err)
	}

	rec := &factRecorder{}
	tl = mustLoadSrc(t, src, tool.WithObserver(rec))
	task := newTask(t, tl, tool.TaskConfig{Capability: tool.Capability{
		Bindings: map[string]any{"owner": "octo", "repo": "hello", "label": "bug"}}})
	if got := task.AllowList(); !reflect.DeepEqual(got, map[string][]string{
		"owner": {"octo"}, "repo": {"hello"}, "label": {"bug"}}) {
		t.Errorf("AllowList = %v", got)
	}
	mustInvoke(t, task, "act", map[string]any{"limit": 3})
	if got := task.AllowList()["limit"]; !reflect.DeepEqual(got, []string{"3"}) {
		t.Errorf("allow list limit = %v, want [3]", got)
	}
	if names := rec.names(); len(names) == 0 || names[0] != "tool.catalog.resolved" {
		t.Errorf("facts = %v, want tool.catalog.resolved first", names)
	}
}

func TestResolveBindings(t *testing.T) {
	t.Parallel()
	env := tool.BindingEnv{Context: map[string]any{"repo": map[string]any{"owner": "octo", "id": 42}},
		Runtime: tool.RuntimeInfo{Version: "1.2"}}
	tests := []struct {
		src  string
		want any
	}{
		{"octocat", "octocat"},
		{"my-repo", "my-repo"},
		{"context.repo.owner", "octo"},
		{"c.repo.owner + '/x'", "octo/x"},
		{"{context.repo.owner}/{runtime.version}", "octo/1.2"},
		{"{context.repo.id}", 42},
		{"1 + 2", int64(3)},
	}
	for _, tc := range tests {
		got, err := tool.ResolveBindings(context.Background(), map[string]string{"b": tc.src}, env)
		if err != nil || !reflect.DeepEqual(got["b"], tc.want) {
			t.Errorf("ResolveBindings(b: %q) = %#v, %v; want %#v", tc.src, got, err, tc.want)
		}
	}
	_, err := tool.ResolveBindings(context.Background(), map[string]string{"deep": "context.nope.deeper", "ok": "1"}, env)
	if err == nil || !strings.Contains(err.Error(), "bindings deep could not") {
		t.Errorf("a failing CEL binding must be an error naming it: %v", err)
	}
	got, err := tool.ResolveBindings(context.Background(), map[string]string{"owner": "context.repo.owner", "n": "7"}, env)
	if err != nil || !reflect.DeepEqual(got, map[string]any{"owner": "octo", "n": int64(7)}) {
		t.Errorf("ResolveBindings = %v, %v", got, err)
	}
}

func TestClosedTask(t *testing.T) {
	t.Parallel()
	tl := mustLoadSrc(t, calcManifest)
	task, err := tl.NewTask(context.Background(), tool.TaskConfig{Context: calcContext, Capability: tool.Capability{
		Bindings: map[string]any{"owner": "octo"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := task.Close(context.Background()); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	if _, err := task.Invoke(context.Background(), "add", map[string]any{"a": 1}); !errors.Is(err, tool.ErrClosed) {
		t.Errorf("Invoke after Close = %v, want ErrClosed", err)
	}
	if _, err := task.Start(context.Background(), "add", nil); !errors.Is(err, tool.ErrClosed) {
		t.Errorf("Start after Close = %v, want ErrClosed", err)
	}
}

// fixedClock is a Clock stopped at one instant.
type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time                      { return c.t }
func (c fixedClock) NewTimer(d time.Duration) tool.Timer { return tool.SystemClock{}.NewTimer(d) }

func TestCELSeesTheTaskClockAndContext(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 20, 3, 45, 0, 999, time.FixedZone("x", 3600))
	tl, err := tool.LoadFile(context.Background(), "testdata/ok/cel.yaml", tool.WithClock(fixedClock{at}))
	if err != nil {
		t.Fatal(err)
	}
	task := newTask(t, tl, tool.TaskConfig{Context: map[string]any{"agent": map[string]any{"namespace": "ops"}}})
	res := mustInvoke(t, task, "format_date", nil)
	want := map[string]any{"date": "2026-05-20T02:45:00Z", "namespace": "ops"}
	if !reflect.DeepEqual(res.Output, want) {
		t.Errorf("format_date = %v (%v), want %v", res.Output, res.Error, want)
	}
}

func TestInvokeFunctionOutsideCapability(t *testing.T) {
	t.Parallel()
	tl := mustLoadSrc(t, calcManifest)
	task := newTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Include: []string{"add"},
		Bindings: map[string]any{"owner": "octo"}}})
	res, err := task.InvokeFunction(context.Background(), "calc_fail", nil)
	if err != nil || !res.IsError || res.Error.Kind != runtime.KindUnknownFunction ||
		!reflect.DeepEqual(res.Error.Hint.Functions, []string{"calc_add"}) {
		t.Fatalf("excluded function = %+v, %v; want unknown_function listing calc_add", res, err)
	}
	if _, err := task.Invoke(context.Background(), "fail", nil); !errors.Is(err, tool.ErrUnknownAction) {
		t.Fatalf("Invoke of an excluded action: err = %v, want ErrUnknownAction", err)
	}
}

// plainStore hides the memory store's optional interfaces.
type plainStore struct{ tool.Store }

// An allow list at its cap keeps the value a call just added (SPEC §6 evicts the oldest), with or without
// compare-and-swap merging.
func TestAllowListAtItsCapKeepsTheNewestValue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, name := range []string{"memory (SwapStore)", "plain"} {
		t.Run(name, func(t *testing.T) {
			var store tool.Store = tool.NewMemoryStore()
			if name == "plain" {
				store = plainStore{store}
			}
			tl := tooltest.Load(t, repoEvents(""), tool.WithStore(store), tool.WithSettings(map[string]any{"secret": hookSecret}),
				tool.WithLimits(tool.Limits{AllowListValues: 2}))
			task := tooltest.NewTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}})
			for _, l := range []string{"a", "b", "c"} {
				if _, err := task.Invoke(ctx, "watch_label", map[string]any{"label": l}); err != nil {
					t.Fatal(err)
				}
			}
			if got := fmt.Sprint(task.AllowList()["label"]); got != "[b c]" {
				t.Errorf("label allow list after a, b, c with cap 2 = %s, want [b c]", got)
			}
		})
	}
}

// TestBackendSchemaDecidesExtraArguments pins SPEC §3.1 (issue 29): an MCP tool's own schema decides which
// arguments beyond its declared properties pass, root keywords included; settings keys never pass and bound
// parameters keep their bound value.
func TestBackendSchemaDecidesExtraArguments(t *testing.T) {
	t.Parallel()
	url := schemaServer(t, map[string]json.RawMessage{
		"open":   json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`),
		"closed": json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`),
		"either": json.RawMessage(`{"anyOf":[{"required":["a"]},{"required":["b"]}],
			"properties":{"a":{"type":"string"},"b":{"type":"string"}}}`),
		"typed": json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}},
			"patternProperties":{"^n_":{"type":"integer"}}}`),
	}, func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		b, _ := json.Marshal(req.GetArguments())
		return mcp.NewToolResultText(string(b)), nil
	})
	src := manifestHeader("extras") + "settings:\n  properties:\n    token: {type: string, format: password}\n" +
		"mcp:\n  transport: streamable_http\n  url: " + url + "\nactions: []\n"
	tl := mustLoadSrc(t, src, tool.WithDiscovery(true), tool.WithSettings(map[string]any{"token": "t0ken-SECRET"}))
	if s := tl.Skipped(); len(s) > 0 {
		t.Fatalf("skipped: %v", s)
	}
	task := newTask(t, tl, tool.TaskConfig{})
	bound := newTask(t, tl, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"a": "bound"}}})
	tests := []struct {
		name, action string
		task         *tool.Task
		args         map[string]any
		sent         string // the arguments the server received; "" when the call is refused
		refusal      string
	}{
		{"allowed extra passes", "open", task, map[string]any{"a": "x", "b": 1.0}, `{"a":"x","b":1}`, ""},
		{"forbidden extra refused", "closed", task, map[string]any{"a": "x", "b": 1.0}, "", "b: is not an allowed property"},
		{"root anyOf applies", "either", task, map[string]any{}, "", "anyOf"},
		{"root anyOf satisfied", "either", task, map[string]any{"b": "y"}, `{"b":"y"}`, ""},
		{"patternProperties type", "typed", task, map[string]any{"n_count": "three"}, "", "n_count: must be of type integer"},
		{"patternProperties passes", "typed", task, map[string]any{"n_count": 3.0}, `{"n_count":3}`, ""},
		{"a settings key never passes", "open", task, map[string]any{"a": "x", "token": "s3cret"}, "", `"token" cannot be passed`},
		{"a bound parameter keeps its value", "open", bound, map[string]any{"a": "llm", "b": 2.0}, `{"a":"bound","b":2}`, ""},
	}
	for _, tc := range tests {
		res := mustInvoke(t, tc.task, tc.action, tc.args)
		switch {
		case tc.sent != "" && (res.IsError || res.Text() != tc.sent):
			t.Errorf("%s: result %+v (%s), want the server to receive %s", tc.name, res.Error, res.Text(), tc.sent)
		case tc.sent == "" && (!res.IsError || res.Error.Kind != runtime.KindInvalidArguments ||
			!strings.Contains(res.Error.Message, tc.refusal)):
			t.Errorf("%s: result %+v, want invalid_arguments containing %q", tc.name, res.Error, tc.refusal)
		case res.IsError && strings.Contains(res.Error.Message, "s3cret"):
			t.Errorf("%s: the refused value is in the message: %s", tc.name, res.Error.Message)
		}
	}
}
