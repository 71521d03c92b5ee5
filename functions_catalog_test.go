package tool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"testing"

	"github.com/commonagents-go/tool"
)

// manifestHeader returns the identity fields of a manifest named name.
func manifestHeader(name string) string {
	return "kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: " + name + "\ndescription: A test tool.\n"
}

// mustLoadSrc loads src and fails the test on any error.
func mustLoadSrc(t *testing.T, src string, opts ...tool.Option) *tool.Tool {
	t.Helper()
	tl, err := tool.Load(context.Background(), []byte(src), opts...)
	if err != nil {
		t.Fatalf("Load: %v\nmanifest:\n%s", err, src)
	}
	return tl
}

// mustFailSrc loads src and returns its *ValidationError, failing the test when Load succeeds or fails otherwise.
func mustFailSrc(t *testing.T, src string, opts ...tool.Option) *tool.ValidationError {
	t.Helper()
	_, err := tool.Load(context.Background(), []byte(src), opts...)
	var verr *tool.ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("want a *ValidationError, got %v\nmanifest:\n%s", err, src)
	}
	return verr
}

// llmSchema is the part of a function's parameters the tests compare.
type llmSchema struct {
	Properties map[string]map[string]any `json:"properties"`
	Required   []string                  `json:"required"`
}

func decodeLLMSchema(t *testing.T, raw json.RawMessage) llmSchema {
	t.Helper()
	var s llmSchema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("parameters are not JSON: %v\n%s", err, raw)
	}
	return s
}

func (s llmSchema) propertyNames() []string {
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func functionNames(fns []tool.Function) []string {
	names := make([]string, 0, len(fns))
	for _, f := range fns {
		names = append(names, f.Name)
	}
	return names
}

// celAction returns a cel action named name, with extra lines (already indented) inserted before execute.
func celAction(name, extra string) string {
	return "  - name: " + name + "\n    description: Does " + name + ".\n" + extra +
		"    execute:\n      cel:\n        expression: \"'ok'\"\n"
}

func TestFunctionsNaming(t *testing.T) {
	t.Parallel()
	single := manifestHeader("file-reader") + "actions:\n" + celAction("read", "")
	multi := manifestHeader("gh-files") + "actions:\n" + celAction("read-file", "") + celAction("write_file", "") +
		celAction("Stat-2", "")
	tests := []struct {
		name     string
		manifest string
		key      string
		want     []string
		actions  []string
	}{
		{"single action, default key is the tool name", single, "", []string{"file_reader"}, []string{"read"}},
		{"single action, key sanitized", single, "repo.files-v2", []string{"repo_files_v2"}, []string{"read"}},
		{"single action, plain key kept", single, "Files_1", []string{"Files_1"}, []string{"read"}},
		{"single action, non-ASCII becomes _, trimmed at the end", single, "café", []string{"caf"}, []string{"read"}},
		{"single action, runs of _ collapse", single, "a..b--c", []string{"a_b_c"}, []string{"read"}},
		{"several actions, over 64 characters: shortened with a stable hash", multi,
			"an-agent-capability-key-that-is-long-enough-to-overflow", []string{
				"an_agent_capability_key_that_is_long_enough_to_overflow_ece975eb",
				"an_agent_capability_key_that_is_long_enough_to_overflow_14a347ae",
				"an_agent_capability_key_that_is_long_enough_to_overflow_Stat_2"},
			[]string{"read-file", "write_file", "Stat-2"}},
		{"several actions, default key", multi, "", []string{"gh_files_read_file", "gh_files_write_file", "gh_files_Stat_2"},
			[]string{"read-file", "write_file", "Stat-2"}},
		{"several actions, key sanitized", multi, "a.b-c", []string{"a_b_c_read_file", "a_b_c_write_file", "a_b_c_Stat_2"},
			[]string{"read-file", "write_file", "Stat-2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tl := mustLoadSrc(t, tt.manifest)
			fns := tl.Functions(tool.Capability{Key: tt.key})
			if got := functionNames(fns); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("names = %v, want %v", got, tt.want)
			}
			for i, f := range fns {
				if f.Action != tt.actions[i] {
					t.Errorf("function %s: Action = %q, want %q", f.Name, f.Action, tt.actions[i])
				}
				if want := "Does " + tt.actions[i] + "."; f.Description != want {
					t.Errorf("function %s: Description = %q, want %q", f.Name, f.Description, want)
				}
				assertLLMSchema(t, f)
			}
		})
	}
}

func loadErr(src string) error {
	_, err := tool.Load(context.Background(), []byte(src))
	return err
}

func TestFunctionsInclude(t *testing.T) {
	t.Parallel()
	src := manifestHeader("abc") + "actions:\n" + celAction("alpha", "") + celAction("beta", "") + celAction("gamma", "")
	tl := mustLoadSrc(t, src)
	tests := []struct {
		name    string
		include []string
		want    []string
	}{
		{"nil includes all", nil, []string{"alpha", "beta", "gamma"}},
		{"empty includes none", []string{}, []string{}},
		{"subset in manifest order", []string{"gamma", "alpha"}, []string{"alpha", "gamma"}},
		{"unknown names are ignored", []string{"beta", "delta"}, []string{"beta"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fns := tl.Functions(tool.Capability{Include: tt.include})
			got := make([]string, 0, len(fns))
			for _, f := range fns {
				got = append(got, f.Action)
				if want := "abc_" + f.Action; f.Name != want {
					t.Errorf("Name = %q, want %q", f.Name, want)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("actions = %v, want %v", got, tt.want)
			}
		})
	}
}

// bindingsManifest has required root parameters (one with require_binding), an action with a defaulted parameter,
// and an action whose explicit required array overrides the default rule.
var bindingsManifest = manifestHeader("binder") + `parameters:
  properties:
    owner:
      type: string
      require_binding: true
      description: The repository owner.
    repo:
      type: string
    branch:
      type: string
      default: main
actions:
  - name: search
    description: Searches.
    parameters:
      properties:
        query:
          type: string
        limit:
          type: integer
          default: 10
    execute:
      cel:
        expression: "'ok'"
  - name: explicit
    description: Has an explicit required array.
    parameters:
      required: [limit]
      properties:
        title:
          type: string
        limit:
          type: integer
          default: 5
    execute:
      cel:
        expression: "'ok'"
`

func TestFunctionsBindingsAndRequired(t *testing.T) {
	t.Parallel()
	tl := mustLoadSrc(t, bindingsManifest)
	tests := []struct {
		name     string
		action   string
		bindings map[string]any
		props    []string
		required []string
	}{
		{"no bindings", "search", nil,
			[]string{"branch", "limit", "owner", "query", "repo"}, []string{"owner", "query", "repo"}},
		{"root binding hidden", "search", map[string]any{"owner": "octo"},
			[]string{"branch", "limit", "query", "repo"}, []string{"query", "repo"}},
		{"root and action bindings hidden", "search", map[string]any{"owner": "octo", "query": "q", "limit": 3},
			[]string{"branch", "repo"}, []string{"repo"}},
		{"bound defaulted parameter hidden", "search", map[string]any{"branch": "dev"},
			[]string{"limit", "owner", "query", "repo"}, []string{"owner", "query", "repo"}},
		{"binding of another action's parameter changes nothing", "search", map[string]any{"title": "t"},
			[]string{"branch", "limit", "owner", "query", "repo"}, []string{"owner", "query", "repo"}},
		{"explicit required array wins", "explicit", nil,
			[]string{"branch", "limit", "owner", "repo", "title"}, []string{"limit", "owner", "repo"}},
		{"explicit required array, bound entry dropped", "explicit", map[string]any{"limit": 1, "repo": "r"},
			[]string{"branch", "owner", "title"}, []string{"owner"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fns := tl.Functions(tool.Capability{Include: []string{tt.action}, Bindings: tt.bindings})
			if len(fns) != 1 || fns[0].Action != tt.action {
				t.Fatalf("want one function for %s, got %v", tt.action, functionNames(fns))
			}
			fn := fns[0]
			assertLLMSchema(t, fn)
			s := decodeLLMSchema(t, fn.Parameters)
			if got := s.propertyNames(); !reflect.DeepEqual(got, tt.props) {
				t.Errorf("properties = %v, want %v", got, tt.props)
			}
			got := append([]string(nil), s.Required...)
			sort.Strings(got)
			if !reflect.DeepEqual(got, tt.required) {
				t.Errorf("required = %v, want %v", s.Required, tt.required)
			}
			if bytes.Contains(fn.Parameters, []byte("require_binding")) {
				t.Errorf("require_binding reached the LLM: %s", fn.Parameters)
			}
		})
	}
}

func TestFunctionsPropertySchemaKept(t *testing.T) {
	t.Parallel()
	tl := mustLoadSrc(t, bindingsManifest)
	fns := tl.Functions(tool.Capability{Include: []string{"search"}})
	if len(fns) != 1 {
		t.Fatalf("want one function, got %d", len(fns))
	}
	s := decodeLLMSchema(t, fns[0].Parameters)
	tests := []struct {
		prop, keyword string
		want          any
	}{
		{"owner", "type", "string"},
		{"owner", "description", "The repository owner."},
		{"limit", "type", "integer"},
		{"limit", "default", float64(10)},
		{"branch", "default", "main"},
	}
	for _, tt := range tests {
		if got := s.Properties[tt.prop][tt.keyword]; got != tt.want {
			t.Errorf("%s.%s = %#v, want %#v", tt.prop, tt.keyword, got, tt.want)
		}
	}
	if _, ok := s.Properties["owner"]["require_binding"]; ok {
		t.Error("owner still has require_binding")
	}
}

// TestFunctionsExtensionKeywordsRemoved checks SPEC §3.5: extension keywords never reach the LLM.
func TestFunctionsExtensionKeywordsRemoved(t *testing.T) {
	t.Parallel()
	src := manifestHeader("ext") + `parameters:
  properties:
    host:
      type: string
      require_binding: true
      x-internal: true
actions:
  - name: act
    description: Acts.
    parameters:
      properties:
        q:
          type: string
          x-ui-widget: textarea
    execute:
      cel:
        expression: "'ok'"
`
	tl := mustLoadSrc(t, src)
	for _, fn := range tl.Functions(tool.Capability{}) {
		assertLLMSchema(t, fn)
		for _, kw := range []string{"require_binding", "x-internal", "x-ui-widget"} {
			if bytes.Contains(fn.Parameters, []byte(kw)) {
				t.Errorf("extension keyword %s reached the LLM: %s", kw, fn.Parameters)
			}
		}
	}
}

func TestFunctionsDeterministic(t *testing.T) {
	t.Parallel()
	caps := []tool.Capability{
		{},
		{Key: "k.v"},
		{Bindings: map[string]any{"owner": "o"}},
		{Bindings: map[string]any{"owner": "o", "limit": 1, "repo": "r"}},
	}
	first := mustLoadSrc(t, bindingsManifest)
	second := mustLoadSrc(t, bindingsManifest)
	for _, c := range caps {
		a, b, other := first.Functions(c), first.Functions(c), second.Functions(c)
		if len(a) != 2 || len(b) != 2 || len(other) != 2 {
			t.Fatalf("want 2 functions each, got %d, %d, %d", len(a), len(b), len(other))
		}
		for i := range a {
			if !bytes.Equal(a[i].Parameters, b[i].Parameters) {
				t.Errorf("two calls differ for %s:\n%s\n%s", a[i].Name, a[i].Parameters, b[i].Parameters)
			}
			if !bytes.Equal(a[i].Parameters, other[i].Parameters) {
				t.Errorf("two loads differ for %s:\n%s\n%s", a[i].Name, a[i].Parameters, other[i].Parameters)
			}
			if !json.Valid(a[i].Parameters) {
				t.Errorf("%s: invalid JSON %s", a[i].Name, a[i].Parameters)
			}
		}
	}
}

// TestFunctionsLLMShapes wraps each function the way OpenAI, Anthropic and MCP expect it and checks that the
// result is valid JSON with the schema in the right place.
func TestFunctionsLLMShapes(t *testing.T) {
	t.Parallel()
	tl := mustLoadSrc(t, bindingsManifest)
	fns := tl.Functions(tool.Capability{Bindings: map[string]any{"owner": "octo"}})
	if len(fns) != 2 {
		t.Fatalf("want 2 functions, got %d", len(fns))
	}
	shapes := []struct {
		name   string
		wrap   func(tool.Function) any
		schema func(map[string]any) any
	}{
		{"openai", func(f tool.Function) any {
			return map[string]any{"type": "function", "function": map[string]any{
				"name": f.Name, "description": f.Description, "parameters": f.Parameters}}
		}, func(m map[string]any) any { return m["function"].(map[string]any)["parameters"] }},
		{"anthropic", func(f tool.Function) any {
			return map[string]any{"name": f.Name, "description": f.Description, "input_schema": f.Parameters}
		}, func(m map[string]any) any { return m["input_schema"] }},
		{"mcp", func(f tool.Function) any {
			return map[string]any{"name": f.Name, "description": f.Description, "inputSchema": f.Parameters}
		}, func(m map[string]any) any { return m["inputSchema"] }},
	}
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			t.Parallel()
			for _, f := range fns {
				assertLLMSchema(t, f)
				enc, err := json.Marshal(sh.wrap(f))
				if err != nil {
					t.Fatalf("%s: %v", f.Name, err)
				}
				var m map[string]any
				if err := json.Unmarshal(enc, &m); err != nil {
					t.Fatalf("%s: %v", f.Name, err)
				}
				s, ok := sh.schema(m).(map[string]any)
				if !ok || s["type"] != "object" || s["additionalProperties"] != false {
					t.Errorf("%s: schema is not a closed object: %s", f.Name, enc)
				}
				if _, ok := s["properties"].(map[string]any)["owner"]; ok {
					t.Errorf("%s: bound owner is shown: %s", f.Name, enc)
				}
			}
		})
	}
}

func TestFunctionsConflictingParameter(t *testing.T) {
	t.Parallel()
	src := manifestHeader("conflict") + `parameters:
  properties:
    q: { type: string }
actions:
  - name: act
    description: Acts.
    parameters:
      properties:
        q: { type: integer }
    execute:
      cel:
        expression: "'ok'"
`
	assertProblem(t, loadErr(src), "actions[0].parameters.properties.q", "invalid")
}

// catalogManifest has one action per derived-traits rule, plus annotated ones.
var catalogManifest = manifestHeader("cat") + `parameters:
  properties:
    owner:
      type: string
      require_binding: true
actions:
  - name: get
    description: Reads over HTTP.
    execute:
      stateless_http:
        method: GET
        url: "https://api.example.com/{parameters.owner}"
  - name: post
    description: Writes over HTTP.
    execute:
      stateless_http:
        method: POST
        url: "https://api.example.com/{parameters.owner}"
  - name: calc
    description: Computes.
    execute:
      cel:
        expression: "'ok'"
  - name: run
    description: Runs a program.
    execute:
      exec:
        command: "echo"
  - name: ask
    description: Asks an MCP server.
    execute:
      mcp:
        transport: stdio
        command: "server"
  - name: annotated
    description: A POST that only reads.
    annotations:
      read_only: true
      interrupt_behavior: cancel
    execute:
      stateless_http:
        method: POST
        url: "https://api.example.com/search"
  - name: tagged
    description: Annotated capabilities and flags.
    annotations:
      destructive: false
      idempotent: true
      concurrency_safe: true
      open_world: false
      interrupt_behavior: block
      capabilities: [write, custom]
    execute:
      exec:
        command: "echo"
`

func TestCatalogFlags(t *testing.T) {
	t.Parallel()
	tl := mustLoadSrc(t, catalogManifest)
	entries := tl.Catalog(tool.Capability{})
	type flags struct {
		owner                                                    string
		readOnly, destructive, idempotent, concurrent, openWorld bool
		interrupt                                                string
	}
	want := map[string]flags{
		"get":       {owner: "http", readOnly: true, idempotent: true, concurrent: true, openWorld: true, interrupt: "block"},
		"post":      {owner: "http", destructive: true, openWorld: true, interrupt: "block"},
		"calc":      {owner: "local", readOnly: true, idempotent: true, concurrent: true, interrupt: "block"},
		"run":       {owner: "subprocess", destructive: true, interrupt: "block"},
		"ask":       {owner: "mcp_server", destructive: true, openWorld: true, interrupt: "block"},
		"annotated": {owner: "http", readOnly: true, openWorld: true, interrupt: "cancel"},
		"tagged":    {owner: "subprocess", idempotent: true, concurrent: true, interrupt: "block"},
	}
	if len(entries) != len(want) {
		t.Fatalf("want %d entries, got %d", len(want), len(entries))
	}
	for _, e := range entries {
		t.Run(e.Action, func(t *testing.T) {
			w, ok := want[e.Action]
			if !ok {
				t.Fatalf("unexpected action %q", e.Action)
			}
			got := flags{e.RuntimeOwner, e.IsReadOnly, e.IsDestructive, e.IsIdempotent, e.IsConcurrencySafe,
				e.IsOpenWorld, e.InterruptBehavior}
			if got != w {
				t.Errorf("flags = %+v, want %+v", got, w)
			}
			if e.Policy != "allowed" || e.PolicyReason != "" {
				t.Errorf("policy = %q (%q), want allowed", e.Policy, e.PolicyReason)
			}
			if e.Capabilities == nil {
				t.Error("Capabilities is nil, want a (possibly empty) list")
			}
		})
	}
}

func TestCatalogCapabilities(t *testing.T) {
	t.Parallel()
	tl := mustLoadSrc(t, catalogManifest)
	want := map[string][]string{
		"get":    {"network", "read"},
		"post":   {"network", "write"},
		"calc":   {"read"},
		"run":    {"shell"},
		"tagged": {"write", "custom"},
	}
	for _, e := range tl.Catalog(tool.Capability{}) {
		w, ok := want[e.Action]
		if !ok {
			continue
		}
		if !reflect.DeepEqual(e.Capabilities, w) {
			t.Errorf("%s: capabilities = %v, want %v", e.Action, e.Capabilities, w)
		}
	}
}

func TestCatalogPolicyAndSchema(t *testing.T) {
	t.Parallel()
	tl := mustLoadSrc(t, catalogManifest)
	tests := []struct {
		name    string
		cap     tool.Capability
		allowed []string
	}{
		{"all", tool.Capability{}, []string{"get", "post", "calc", "run", "ask", "annotated", "tagged"}},
		{"none", tool.Capability{Include: []string{}}, nil},
		{"subset with key and bindings", tool.Capability{Key: "my.cat", Include: []string{"calc", "get"},
			Bindings: map[string]any{"owner": "octo"}}, []string{"get", "calc"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			entries := tl.Catalog(tt.cap)
			if len(entries) != 7 {
				t.Fatalf("Catalog lists every action: want 7, got %d", len(entries))
			}
			fns := map[string]tool.Function{}
			for _, f := range tl.Functions(tt.cap) {
				fns[f.Action] = f
			}
			var allowed []string
			for _, e := range entries {
				f, included := fns[e.Action]
				switch e.Policy {
				case "allowed":
					allowed = append(allowed, e.Action)
					if !included {
						t.Errorf("%s: allowed but not among the functions", e.Action)
						continue
					}
					if e.PolicyReason != "" {
						t.Errorf("%s: allowed with a reason %q", e.Action, e.PolicyReason)
					}
					if e.Function != f.Name || e.Description != f.Description {
						t.Errorf("%s: entry (%q, %q) != function (%q, %q)", e.Action, e.Function, e.Description,
							f.Name, f.Description)
					}
					if !bytes.Equal(e.InputSchema, f.Parameters) {
						t.Errorf("%s: input_schema %s != parameters %s", e.Action, e.InputSchema, f.Parameters)
					}
				case "denied":
					if included {
						t.Errorf("%s: denied but among the functions", e.Action)
					}
					if e.PolicyReason == "" {
						t.Errorf("%s: denied without a reason", e.Action)
					}
				default:
					t.Errorf("%s: policy %q", e.Action, e.Policy)
				}
				_, bound := tt.cap.Bindings["owner"]
				if shown := bytes.Contains(e.InputSchema, []byte(`"owner"`)); shown == bound {
					t.Errorf("%s: owner shown = %t with bindings %v: %s", e.Action, shown, tt.cap.Bindings, e.InputSchema)
				}
			}
			if !reflect.DeepEqual(allowed, tt.allowed) {
				t.Errorf("allowed = %v, want %v", allowed, tt.allowed)
			}
		})
	}
}

func TestCatalogJSONShape(t *testing.T) {
	t.Parallel()
	tl := mustLoadSrc(t, catalogManifest)
	entries := tl.Catalog(tool.Capability{Include: []string{"get"}})
	enc, err := json.Marshal(entries[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(enc, &m); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"tool_name", "description", "input_schema", "capabilities", "policy", "policy_reason",
		"runtime_owner", "is_read_only", "is_destructive", "is_idempotent", "is_concurrency_safe", "is_open_world",
		"interrupt_behavior"} {
		if _, ok := m[key]; !ok {
			t.Errorf("catalog entry JSON lacks %q: %s", key, enc)
		}
	}
	if s, ok := m["input_schema"].(map[string]any); !ok || s["type"] != "object" {
		t.Errorf("input_schema is not an embedded object schema: %s", enc)
	}
}
