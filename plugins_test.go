package tool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/events"
	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/runtime"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

// graphql is a third party's backend with a top-level block: `graphql: {endpoint, operations}` is shared by every
// graphql action, validated once (SharedValidator), and expands its operations into actions (Expander).
type graphql struct{ prepared *[]any } // the Block.Shared each Prepare saw

type graphqlShared struct {
	Endpoint   string   `json:"endpoint"`
	Operations []string `json:"operations"`
}

type graphqlConfig struct {
	Query string `json:"query"`
}

type graphqlAction struct{ endpoint, query string }

func (graphql) Kind() string { return "graphql" }

func (g graphql) Prepare(_ context.Context, b *runtime.Block) (runtime.Action, error) {
	*g.prepared = append(*g.prepared, b.Shared)
	var shared graphqlShared
	errs := b.DecodeShared(&shared)
	var cfg graphqlConfig
	if b.Value != nil {
		errs = append(errs, b.Decode(&cfg)...)
	}
	return &graphqlAction{endpoint: shared.Endpoint, query: cfg.Query}, errs.Err()
}

func (graphql) ValidateShared(_ context.Context, b *runtime.Block) error {
	var shared graphqlShared
	errs := b.DecodeShared(&shared)
	if shared.Endpoint == "" {
		errs.Add(field.Required(b.SharedPath.Child("endpoint"), "endpoint is required"))
	}
	return errs.Err()
}

func (graphql) Expand(_ context.Context, b *runtime.Block) (*runtime.Expansion, error) {
	var shared graphqlShared
	if errs := b.DecodeShared(&shared); len(errs) > 0 {
		return nil, errs.Err()
	}
	exp := &runtime.Expansion{}
	for _, op := range shared.Operations {
		exp.Actions = append(exp.Actions, runtime.Expanded{Name: op, Description: "GraphQL operation " + op,
			Parameters: map[string]any{"type": "object", "properties": map[string]any{}},
			Action:     &graphqlAction{endpoint: shared.Endpoint, query: "{ " + op + " }"}})
	}
	return exp, nil
}

func (graphql) ConfigSchema() runtime.ConfigSchema {
	return runtime.ConfigSchema{
		Block: json.RawMessage(`{"type": "object", "additionalProperties": false,
			"properties": {"query": {"type": "string"}}}`),
		Shared: json.RawMessage(`{"$ref": "#/definitions/graphqlShared"}`),
		Definitions: map[string]json.RawMessage{"graphqlShared": json.RawMessage(`{"type": "object",
			"required": ["endpoint"], "additionalProperties": false,
			"properties": {"endpoint": {"type": "string"}, "operations": {"type": "array", "items": {"type": "string"}}}}`)},
	}
}

func (graphql) Initialize(context.Context, *runtime.Init) (runtime.Instance, error) {
	return graphqlInstance{}, nil
}

type graphqlInstance struct{}

func (graphqlInstance) Invoke(_ context.Context, a runtime.Action, _ *runtime.Call) (*runtime.Result, error) {
	ga := a.(*graphqlAction)
	return &runtime.Result{Output: ga.endpoint + " " + ga.query}, nil
}

func (graphqlInstance) Teardown(context.Context) error { return nil }

const graphqlManifest = `kind: commonagents.info/v1beta2/tool
namespace: tests
name: gh
description: GitHub over GraphQL.
graphql:
  endpoint: https://api.github.com/graphql
  operations: [viewer]
actions:
  - name: issues
    description: Lists issues.
    execute:
      graphql: { query: "{ issues }" }
`

func graphqlRuntimes(t *testing.T) (*runtime.Registry, *[]any) {
	t.Helper()
	seen := &[]any{}
	r := runtime.Default().Clone()
	if err := r.Register(graphql{prepared: seen}); err != nil {
		t.Fatal(err)
	}
	return r, seen
}

// A third party's backend gets its top-level block as the built-ins do: decoded, validated once, handed to every
// Prepare as Block.Shared, expanded, kept in Manifest.Shared and described in the manifest schema.
func TestThirdPartyBackendTopLevelBlock(t *testing.T) {
	ctx := context.Background()
	runtimes, seen := graphqlRuntimes(t)
	tl, err := tool.Load(ctx, []byte(graphqlManifest), tool.WithRuntimes(runtimes))
	if err != nil {
		t.Fatal(err)
	}
	if len(*seen) != 1 { // the declared action (the expanded one comes prepared)
		t.Fatalf("Prepare ran %d times, want 1", len(*seen))
	}
	for _, shared := range *seen {
		if m, _ := shared.(map[string]any); m["endpoint"] != "https://api.github.com/graphql" {
			t.Errorf("Prepare saw Block.Shared %v", shared)
		}
	}
	var names []string
	for _, f := range tl.Functions(tool.Capability{}) {
		names = append(names, f.Name)
	}
	if strings.Join(names, " ") != "gh_issues gh_viewer" {
		t.Errorf("functions %q, want the declared and the expanded action", names)
	}
	task, err := tl.NewTask(ctx, tool.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer task.Close(ctx)
	res, err := task.Invoke(ctx, "issues", nil)
	if err != nil || res.Output != "https://api.github.com/graphql { issues }" {
		t.Fatalf("Invoke: %v, %v", res, err)
	}

	m := tl.Manifest()
	if string(m.Shared["graphql"]) != `{"endpoint":"https://api.github.com/graphql","operations":["viewer"]}` {
		t.Errorf("Manifest.Shared = %s", m.Shared)
	}
	js, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back tool.Manifest
	if err := json.Unmarshal(js, &back); err != nil || string(back.Shared["graphql"]) != string(m.Shared["graphql"]) ||
		back.Name != "gh" || len(back.Actions) != 1 {
		t.Errorf("round trip: %v, %+v", err, back)
	}
	if !strings.Contains(string(js), `"graphql":{"endpoint"`) {
		t.Errorf("the block is not a top-level key: %s", js)
	}

	schemaDoc, err := tool.ManifestSchema(tool.WithRuntimes(runtimes))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaDoc))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("urn:tool:manifest", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("urn:tool:manifest")
	if err != nil {
		t.Fatal(err)
	}
	for manifest, valid := range map[string]bool{
		graphqlManifest: true,
		strings.Replace(graphqlManifest, "endpoint:", "endpont:", 1): false, // the top-level block's own schema
		strings.Replace(graphqlManifest, "query:", "qery:", 1):       false, // the execute block's
	} {
		js, err := yaml.YAMLToJSON([]byte(manifest))
		if err != nil {
			t.Fatal(err)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(inst); (err == nil) != valid {
			t.Errorf("schema valid = %v, want %v for:\n%s\n%v", err == nil, valid, manifest, err)
		}
	}
	without, err := tool.ManifestSchema()
	if err != nil || strings.Contains(string(without), "graphql") {
		t.Errorf("the default schema names graphql (%v)", err)
	}
}

func TestThirdPartyTopLevelBlockProblems(t *testing.T) {
	ctx := context.Background()
	runtimes, _ := graphqlRuntimes(t)
	tests := []struct {
		name, manifest, want string
		opts                 []tool.Option
	}{
		{"validated at its path", strings.Replace(graphqlManifest, "endpoint: https://api.github.com/graphql",
			"endpoint: \"\"", 1), "6:3: graphql.endpoint: endpoint is required",
			[]tool.Option{tool.WithRuntimes(runtimes)}},
		{"strictly decoded", strings.Replace(graphqlManifest, "operations:", "operation:", 1),
			`7:3: graphql.operation: unknown field "operation" (did you mean "operations"?)`, []tool.Option{tool.WithRuntimes(runtimes)}},
		{"unregistered", graphqlManifest, `5:1: graphql: unknown field "graphql"`, nil},
		{"a backend without a top-level block", strings.Replace(graphqlManifest, "graphql:\n", "cel:\n  expression: '1'\ngraphql:\n", 1),
			`5:1: cel: unknown field "cel"`, []tool.Option{tool.WithRuntimes(runtimes)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tool.Load(ctx, []byte(tt.manifest), tt.opts...)
			var ve *tool.ValidationError
			if !errors.As(err, &ve) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want a problem %q", err, tt.want)
			}
		})
	}
}

// A plugin's kind is its top-level key: one that is a core manifest key cannot be registered.
func TestRegisterRefusesCoreKeys(t *testing.T) {
	var keys []string // every key Manifest decodes itself
	mt := reflect.TypeFor[tool.Manifest]()
	for i := range mt.NumField() {
		if name, _, _ := strings.Cut(mt.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	if len(keys) < 9 {
		t.Fatalf("Manifest's keys: %q", keys)
	}
	for _, key := range keys {
		if err := runtime.Default().Clone().Register(namedRuntime(key)); err == nil ||
			!strings.Contains(err.Error(), "core manifest key") {
			t.Errorf("runtime %q: %v", key, err)
		}
		if err := events.Default().Clone().Register(namedReceiver{kind: key}); err == nil {
			t.Errorf("receiver %q registered", key)
		}
	}
	if err := runtime.Default().Clone().Register(namedRuntime("graphql")); err != nil {
		t.Errorf("graphql: %v", err)
	}
}

// namedReceiver is a receiver of any kind; Register calls nothing but Kind.
type namedReceiver struct {
	events.Receiver
	kind string
}

func (n namedReceiver) Kind() string { return n.kind }

// A top-level block of a built-in backend the host did not import says which package to import.
func TestTopLevelBlockOfAnUnimportedBackend(t *testing.T) {
	_, err := tool.Load(context.Background(), []byte(manifestHeader("jobs")+`kubernetes_job:
  namespace: batch
actions:
  - name: noop
    description: Does nothing.
    execute:
      cel: { expression: "1" }
`))
	if err == nil || !strings.Contains(err.Error(), `kubernetes_job: the kubernetes_job backend is not registered: import _ "github.com/commonagents-go/tool/runtime/kubernetesjob"`) {
		t.Fatalf("got %v", err)
	}
}
