package tool_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/internal/schema"
)

// AnthropicSchema keeps the whole schema: what Properties drops ($defs, additionalProperties) is in Extra.
func TestAnthropicSchemaIsWhole(t *testing.T) {
	f := tool.Function{Name: "f", Parameters: json.RawMessage(`{"type": "object",
		"properties": {"a": {"$ref": "#/$defs/A"}, "b": {"type": "string"}},
		"required": ["a"], "additionalProperties": false,
		"$defs": {"A": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}}}`)}
	s := f.AnthropicSchema()
	props, required := f.Properties()
	if !reflect.DeepEqual(s.Properties, props) || !reflect.DeepEqual(s.Required, required) {
		t.Errorf("Properties/Required = %v %v, want %v %v", s.Properties, s.Required, props, required)
	}
	whole := map[string]any{"type": "object", "properties": s.Properties, "required": []any{"a"}}
	for k, v := range s.Extra {
		whole[k] = v
	}
	if !reflect.DeepEqual(whole, f.Schema()) {
		t.Errorf("the three parts put together = %v, want the schema %v", whole, f.Schema())
	}
	strict, ok := f.AnthropicStrictSchema()
	if !ok {
		t.Fatal("no strict form for a schema strict tool use can express")
	}
	def := strict.Extra["$defs"].(map[string]any)["A"].(map[string]any)
	if def["additionalProperties"] != false || strict.Extra["additionalProperties"] != false {
		t.Errorf("strict form = %v, want every object closed", strict)
	}
	if !reflect.DeepEqual(strict.Required, []string{"a"}) {
		t.Errorf("strict Required = %v, want the optional parameter kept optional", strict.Required)
	}
}

// A schema that needs what strict tool use cannot say has no strict form.
func TestAnthropicStrictSchemaRefuses(t *testing.T) {
	for name, params := range map[string]string{
		"minimum":       `{"n": {"type": "integer", "minimum": 1}}`,
		"maxLength":     `{"s": {"type": "string", "maxLength": 5}}`,
		"pattern":       `{"s": {"type": "string", "pattern": "^a"}}`,
		"minItems 2":    `{"l": {"type": "array", "items": {"type": "string"}, "minItems": 2}}`,
		"oneOf":         `{"v": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}`,
		"open object":   `{"labels": {"type": "object"}}`,
		"open map":      `{"labels": {"type": "object", "additionalProperties": {"type": "string"}}}`,
		"object enum":   `{"v": {"enum": [{"a": 1}]}}`,
		"format":        `{"v": {"type": "string", "format": "regex"}}`,
		"three types":   `{"v": {"type": ["string", "integer", "null"]}}`,
		"recursive ref": `{"tree": {"$ref": "#/$defs/Node"}}`,
	} {
		doc := `{"type": "object", "properties": ` + params +
			`, "$defs": {"Node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}}`
		f := tool.Function{Name: "f", Parameters: json.RawMessage(doc)}
		if s, ok := f.AnthropicStrictSchema(); ok {
			t.Errorf("%s: strict form %v, want none", name, s)
		}
	}
}

const anthropicManifest = `kind: commonagents.info/v1beta2/tool
namespace: tests
name: shapes
description: Echoes its arguments.
actions:
  - name: echo
    description: Echoes.
    parameters:
      required: [title]
      properties:
        title: {type: string}
        count: {type: integer, default: 3}
        ratio: {type: number}
        mode: {type: string, enum: [fast, slow]}
        when: {type: string, format: date}
        flag: {type: boolean}
        tags: {type: array, items: {type: string}, minItems: 1}
        note: {type: [string, "null"]}
        options:
          type: object
          required: [a]
          properties:
            a: {type: boolean}
            b: {type: string}
    execute:
      cel:
        expression: "input"
`

// The strict form never allows what validation refuses: random arguments that the strict form accepts are never
// refused by InvokeFunction as invalid.
func TestAnthropicStrictSchemaNeverAllowsMore(t *testing.T) {
	tl := mustLoadSrc(t, anthropicManifest)
	task := newTask(t, tl, tool.TaskConfig{})
	f := task.Functions()[0]
	strict, ok := f.AnthropicStrictSchema()
	if !ok {
		t.Fatalf("no strict form for %s", f.Parameters)
	}
	required := []any{}
	for _, r := range strict.Required {
		required = append(required, r)
	}
	doc := map[string]any{"type": "object", "properties": strict.Properties, "required": required}
	for k, v := range strict.Extra {
		doc[k] = v
	}
	compiled, problems := schema.Compile(doc, nil, schema.Options{})
	if len(problems) > 0 {
		t.Fatalf("the strict form does not compile: %v", problems)
	}
	// Each name draws from values of its own shape, right and nearly right, and from the shared pool.
	shared := []any{nil, true, 0.0, 2.5, "", "x", []any{}, map[string]any{}}
	own := map[string][]any{
		"title":   {"hello", ""},
		"count":   {1.0, -7.0, 1.5},
		"ratio":   {0.25, 3.0},
		"mode":    {"fast", "slow", "medium"},
		"when":    {"2026-11-26", "not a date", "2026-13-01"},
		"flag":    {true, false},
		"tags":    {[]any{"a"}, []any{"a", "b"}, []any{1.0}},
		"note":    {nil, "text"},
		"options": {map[string]any{"a": true}, map[string]any{"a": true, "b": "x"}, map[string]any{"a": true, "z": 1.0}, map[string]any{"b": "x"}},
		"extra":   {"surplus"},
	}
	if v := compiled.Validate(map[string]any{"title": "hello"}); len(v) > 0 {
		t.Fatalf("the strict form refuses {title: hello}: %v (%v)", v, doc)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	accepted := 0
	for range 5000 {
		args := map[string]any{}
		for name, pool := range own {
			switch rng.IntN(8) {
			case 0, 1: // absent
			case 2:
				args[name] = shared[rng.IntN(len(shared))]
			default:
				args[name] = pool[rng.IntN(len(pool))]
			}
		}
		if len(compiled.Validate(args)) > 0 {
			continue
		}
		accepted++
		b, _ := json.Marshal(args)
		res, err := task.InvokeFunction(context.Background(), f.Name, b)
		if err != nil || res.IsError {
			t.Fatalf("the strict form accepts %s, but InvokeFunction refused it: %v %v", b, err, res.Text())
		}
	}
	if accepted < 20 {
		t.Fatalf("only %d random argument sets passed the strict form: the test shows nothing", accepted)
	}
}
