package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/events"
	"github.com/commonagents-go/tool/events/poll"
	"github.com/commonagents-go/tool/events/subscription"
	"github.com/commonagents-go/tool/events/webhook"
	"github.com/commonagents-go/tool/internal/decode"
	"github.com/commonagents-go/tool/internal/httpspec"
	"github.com/commonagents-go/tool/runtime"
	"github.com/commonagents-go/tool/runtime/celexpr"
	"github.com/commonagents-go/tool/runtime/mcp"
	"github.com/commonagents-go/tool/runtime/openapi"
	"github.com/commonagents-go/tool/runtime/statefulsession"
	"github.com/commonagents-go/tool/runtime/statelesshttp"
	"github.com/commonagents-go/tool/runtime/subprocess"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

// manifestSchema is what `tool schema` prints: the schema built from the command's registries.
func manifestSchema(t *testing.T) []byte {
	t.Helper()
	s, err := tool.ManifestSchema()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// compileSchema compiles the embedded schema after checking it against the draft-07 meta-schema (the validator
// carries the meta-schemas: nothing is fetched).
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(manifestSchema(t)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	if err := c.AddResource("urn:tool:manifest", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("urn:tool:manifest")
	if err != nil {
		t.Fatalf("the generated schema is not a valid draft-07 JSON Schema: %v", err)
	}
	return s
}

// schemaErrors validates a YAML manifest against the schema and returns the lines of the validator's report.
func schemaErrors(t *testing.T, s *jsonschema.Schema, manifest []byte) []string {
	t.Helper()
	js, err := yaml.YAMLToJSON(manifest)
	if err != nil {
		t.Fatalf("YAML to JSON: %v", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	err = s.Validate(inst)
	var verr *jsonschema.ValidationError
	if err == nil || !errors.As(err, &verr) {
		if err != nil {
			t.Fatalf("validate: %v", err)
		}
		return nil
	}
	return strings.Split(verr.Error(), "\n")
}

func TestSchemaAcceptsOKManifests(t *testing.T) {
	t.Parallel()
	s := compileSchema(t)
	files, err := filepath.Glob(filepath.Join(okDir, "*.yaml"))
	if err != nil || len(files) < 10 {
		t.Fatalf("want the manifests of %s, got %d (%v)", okDir, len(files), err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if errs := schemaErrors(t, s, data); len(errs) > 0 {
				t.Errorf("the schema rejects a manifest the loader accepts:\n%s", strings.Join(errs, "\n"))
			}
		})
	}
}

const schemaBase = `kind: "commonagents.info/v1beta2/tool"
namespace: "tests"
name: "sample"
description: "A sample tool."
`

func TestSchemaRejectsBrokenManifests(t *testing.T) {
	t.Parallel()
	s := compileSchema(t)
	celAction := `actions:
  - name: answer
    description: "Returns 42."
    execute:
      cel: { expression: "42" }
`
	tests := []struct {
		name     string
		manifest string
		want     string // a substring of one of the errors; "" for a valid manifest
	}{
		{"valid", schemaBase + celAction, ""},
		{"2020-12 parameters", schemaBase + `actions:
  - name: answer
    description: "Returns 42."
    parameters:
      $schema: https://json-schema.org/draft/2020-12/schema
      properties:
        pair: {type: array, prefixItems: [{type: string}], items: false, minContains: 0}
      unevaluatedProperties: false
      dependentRequired: {pair: [pair]}
    execute:
      cel: { expression: "42" }
`, ""},
		{"unknown top-level key", schemaBase + "colour: blue\n" + celAction, "additional properties 'colour' not allowed"},
		{"two backends", schemaBase + `actions:
  - name: answer
    description: "Returns 42."
    execute:
      cel: { expression: "42" }
      exec: { command: "echo" }
`, "'oneOf' failed"},
		{"no backend", schemaBase + `actions:
  - name: answer
    description: "Returns 42."
    execute: {}
`, "'oneOf' failed"},
		{"unknown backend", schemaBase + `actions:
  - name: answer
    description: "Returns 42."
    execute:
      lambda: { arn: "x" }
`, "additional properties 'lambda' not allowed"},
		{"wrong kind", strings.Replace(schemaBase, "v1beta2", "v1beta1", 1) + celAction, "kind"},
		{"missing namespace", strings.Replace(schemaBase, `namespace: "tests"`+"\n", "", 1) + celAction,
			"missing property 'namespace'"},
		{"bad name", strings.Replace(schemaBase, `name: "sample"`, `name: "1sample"`, 1) + celAction, "name"},
		{"unknown field in a backend", schemaBase + `actions:
  - name: answer
    description: "Returns 42."
    execute:
      cel: { expresion: "42" }
`, "additional properties 'expresion' not allowed"},
		{"unknown JSON Schema keyword", schemaBase + `parameters:
  properties:
    count: { type: integer, minimun: 1 }
` + celAction, "minimun"},
		{"remote $ref", schemaBase + `parameters:
  properties:
    count: { $ref: "https://example.com/count.json" }
` + celAction, "$ref"},
		{"two receive types", schemaBase + celAction + `events:
  - name: ping
    message: "ping"
    receive:
      webhook: {}
      poll: { url: "https://example.com", detect: "[]" }
`, "'oneOf' failed"},
		{"bad duration", schemaBase + celAction + `events:
  - name: ping
    message: "ping"
    timeout: "3 days"
    receive:
      webhook: {}
`, "timeout"},
		{"templated method", schemaBase + `actions:
  - name: fetch
    description: "Fetches."
    execute:
      stateless_http: { method: "{parameters.m}", url: "https://example.com" }
`, "method"},
		{"stdio server with a url", schemaBase + `mcp:
  transport: stdio
  command: "server"
  url: "https://example.com"
`, "'not' failed"},
		{"body and its alias json", schemaBase + celAction + `events:
  - name: ping
    message: "ping"
    receive:
      subscription:
        subscribe: { method: POST, url: "https://example.com", body: {}, json: {} }
`, "'not' failed"},
		{"exec env as a map", schemaBase + `actions:
  - name: run
    description: "Runs."
    execute:
      exec: { command: "x", env: { A: "b" } }
`, "env"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			errs := schemaErrors(t, s, []byte(tt.manifest))
			if tt.want == "" {
				if len(errs) > 0 {
					t.Errorf("want valid, got:\n%s", strings.Join(errs, "\n"))
				}
				return
			}
			joined := strings.Join(errs, "\n")
			if !strings.Contains(joined, tt.want) {
				t.Errorf("want an error mentioning %q, got:\n%s", tt.want, joined)
			}
		})
	}
}

// TestSchemaMatchesDecoder keeps the schema each plugin declares in step with the struct it decodes its block into
// strictly: a field added to one without the other fails here.
func TestSchemaMatchesDecoder(t *testing.T) {
	t.Parallel()
	var doc struct {
		Properties  map[string]json.RawMessage `json:"properties"`
		Definitions map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"definitions"`
	}
	if err := json.Unmarshal(manifestSchema(t), &doc); err != nil {
		t.Fatal(err)
	}
	blocks := []struct {
		definition string // "" = the root
		decodes    any
	}{
		{"", tool.Manifest{}},
		{"action", tool.Action{}},
		{"annotations", tool.Annotations{}},
		{"event", tool.Event{}},
		{"celBlock", celexpr.Config{}},
		{"statelessHTTP", statelesshttp.Config{}},
		{"statelessHTTPShared", statelesshttp.Shared{}},
		{"httpRequest", httpspec.Request{}},
		{"statefulSession", statefulsession.Config{}},
		{"sessionExecute", statefulsession.Execute{}},
		{"openapiAction", openapi.Config{}},
		{"openapiShared", openapi.Shared{}},
		{"mcpAction", mcp.Config{}},
		{"mcpServer", mcp.Server{}},
		{"exec", subprocess.Config{}},
		{"webhook", webhook.Config{}},
		{"subscription", subscription.Config{}},
		{"subscriptionRequest", subscription.Request{}},
		{"poll", poll.Config{}},
	}
	for _, b := range blocks {
		props := doc.Properties
		if b.definition != "" {
			def, ok := doc.Definitions[b.definition]
			if !ok {
				t.Errorf("the schema has no definition %q", b.definition)
				continue
			}
			props = def.Properties
		}
		want := slices.Clone(decode.Keys(b.decodes)) // Keys is cached: never modify it
		if b.definition == "" {                      // the core keys, and the top-level block of each backend that takes one
			for _, kind := range runtime.Default().Kinds() {
				rt, _ := runtime.Default().Lookup(kind)
				if s, ok := rt.(runtime.Schemer); ok && s.ConfigSchema().Shared != nil {
					want = append(want, kind)
				}
			}
		}
		sort.Strings(want)
		if got := sortedKeys(props); !reflect.DeepEqual(got, want) {
			t.Errorf("schema %q has properties %q; %T decodes %q", b.definition, got, b.decodes, want)
		}
	}

	// Every registered backend and receiver has a key (the command registers the checking half of kubernetes_job).
	kinds := runtime.Default().Kinds()
	if got := sortedKeys(doc.Definitions["execute"].Properties); !reflect.DeepEqual(got, kinds) {
		t.Errorf("execute keys %q, registered backends %q", got, kinds)
	}
	if got, want := sortedKeys(doc.Definitions["receive"].Properties), events.Default().Kinds(); !reflect.DeepEqual(got, want) {
		t.Errorf("receive keys %q, registered receivers %q", got, want)
	}
}

func sortedKeys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestSchemaCommand(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runTool(t, "schema")
	if code != exitOK || stderr != "" {
		t.Fatalf("exit code %d, stderr %q", code, stderr)
	}
	if stdout != string(manifestSchema(t)) {
		t.Error("tool schema does not print tool.ManifestSchema()")
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if v["$schema"] != "http://json-schema.org/draft-07/schema#" {
		t.Errorf("$schema = %v, want draft-07", v["$schema"])
	}
}
