package tool_test

import (
	"context"
	"encoding/json"
	"reflect"
	"sort"
	"testing"

	tool "github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/runtime"
)

const orderManifest = `kind: commonagents.info/v1beta2/tool
namespace: tests
name: shop
description: A shop.
actions:
  - name: order
    description: Orders an item.
    parameters:
      definitions:
        address:
          type: object
          properties:
            street: {type: string}
            zip: {type: string}
          required: [street]
      properties:
        item: {type: string}
        size: {type: string, enum: [S, M, L], default: M}
        note: {type: [string, "null"], default: "none"}
        gift_wrap: {type: boolean, default: false}
        ship_to: {$ref: "#/definitions/address", default: {street: "Main St 1"}}
        lines:
          type: array
          default: []
          items:
            type: object
            properties:
              sku: {type: string}
              qty: {type: integer}
            required: [sku]
    execute:
      cel: {expression: "{'item': input.item, 'size': input.size, 'note': input.note, 'ship_to': input.ship_to}"}
  - name: greet
    description: Greets.
    execute:
      cel: {expression: "'# Hello\\n'"}
`

func TestFunctionSchemaAndProperties(t *testing.T) {
	t.Parallel()
	f := mustLoadSrc(t, orderManifest).Functions(tool.Capability{})[0]
	s := f.Schema()
	if s["type"] != "object" || s["additionalProperties"] != false {
		t.Fatalf("Schema() = %v", s)
	}
	s["type"] = "changed" // each call returns a fresh map
	if f.Schema()["type"] != "object" {
		t.Fatal("Schema() shares its map between calls")
	}
	props, required := f.Properties()
	if len(props) != 6 || !reflect.DeepEqual(required, []string{"item"}) {
		t.Fatalf("Properties() = %v, %v", props, required)
	}
	if p, _ := props["size"].(map[string]any); p["default"] != "M" {
		t.Fatalf("size = %v", props["size"])
	}
	noParams := mustLoadSrc(t, orderManifest).Functions(tool.Capability{})[1]
	if props, required := noParams.Properties(); props == nil || len(props) != 0 || len(required) != 0 {
		t.Fatalf("greet Properties() = %v, %v; want an empty, non-nil map", props, required)
	}
}

// checkStrict asserts OpenAI's strict-mode rules on every object with properties.
func checkStrict(t *testing.T, path string, s map[string]any) {
	t.Helper()
	if props, ok := s["properties"].(map[string]any); ok {
		if s["additionalProperties"] != false {
			t.Errorf("%s: additionalProperties = %v, want false", path, s["additionalProperties"])
		}
		var req []string
		for _, r := range s["required"].([]any) {
			req = append(req, r.(string))
		}
		var names []string
		for name, p := range props {
			names = append(names, name)
			checkStrict(t, path+".properties."+name, p.(map[string]any))
		}
		sort.Strings(names)
		if !reflect.DeepEqual(req, names) {
			t.Errorf("%s: required = %v, want every property %v", path, req, names)
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		checkStrict(t, path+".items", items)
	}
	for _, kw := range []string{"anyOf"} {
		for i, sub := range asAnySlice(s[kw]) {
			checkStrict(t, path+"."+kw+"["+string(rune('0'+i))+"]", sub.(map[string]any))
		}
	}
	if defs, ok := s["definitions"].(map[string]any); ok {
		for name, d := range defs {
			checkStrict(t, path+".definitions."+name, d.(map[string]any))
		}
	}
}

func asAnySlice(v any) []any { s, _ := v.([]any); return s }

func TestFunctionStrictSchema(t *testing.T) {
	t.Parallel()
	f := mustLoadSrc(t, orderManifest).Functions(tool.Capability{})[0]
	s := f.StrictSchema()
	checkStrict(t, "$", s)
	props := s["properties"].(map[string]any)
	want := map[string]string{
		"item":      `{"type":"string"}`,
		"size":      `{"default":"M","enum":["S","M","L",null],"type":["string","null"]}`,
		"note":      `{"default":"none","type":["string","null"]}`,
		"gift_wrap": `{"default":false,"type":["boolean","null"]}`,
		"ship_to":   `{"anyOf":[{"$ref":"#/definitions/address","default":{"street":"Main St 1"}},{"type":"null"}]}`,
	}
	for name, w := range want {
		got, _ := json.Marshal(props[name])
		if string(got) != w {
			t.Errorf("strict %s = %s\nwant %s", name, got, w)
		}
	}
	addr := s["definitions"].(map[string]any)["address"].(map[string]any)["properties"].(map[string]any)
	if got, _ := json.Marshal(addr["zip"]); string(got) != `{"type":["string","null"]}` {
		t.Errorf("nested optional zip = %s, want nullable", got)
	}
	if f.Schema()["properties"].(map[string]any)["size"].(map[string]any)["type"] != "string" {
		t.Error("StrictSchema changed the function's own schema")
	}
}

// With the strict schema the LLM sends null for every optional parameter it means to leave out: each is absent, so
// its default applies; a parameter whose schema allows null keeps it.
func TestNullForOptionalParameterIsAbsent(t *testing.T) {
	t.Parallel()
	task := newTask(t, mustLoadSrc(t, orderManifest), tool.TaskConfig{})
	res, err := task.InvokeFunction(context.Background(), "shop_order",
		[]byte(`{"item":"mug","size":null,"note":null,"gift_wrap":null,"ship_to":null,"lines":null}`))
	if err != nil || res.IsError {
		t.Fatalf("strict-mode call: %v %s", err, res.OutputJSON)
	}
	if got := string(res.OutputJSON); got != `{"item":"mug","note":null,"ship_to":{"street":"Main St 1"},"size":"M"}` {
		t.Fatalf("output = %s", got)
	}
	res, err = task.InvokeFunction(context.Background(), "shop_order", []byte(`{"item":null}`))
	if err != nil || !res.IsError || res.Error.Kind != runtime.KindInvalidArguments {
		t.Fatalf("null for a required parameter = %v %+v, want invalid_arguments", err, res)
	}
}

// InvokeFunction takes one JSON object and nothing after it but white space: an LLM's arguments with a stray
// closing bracket or a second value are refused as invalid_arguments, never half-read. What is JSON is what a
// payload's JSON is (jsonvalue): no byte order mark, no "1.".
func TestFunctionArgumentsAreOneJSONObject(t *testing.T) {
	t.Parallel()
	task := newTask(t, mustLoadSrc(t, orderManifest), tool.TaskConfig{})
	for _, args := range []string{`{"item":"mug"}]`, `{"item":"mug"}}`, `{"item":"mug"} {"item":"cup"}`, `{"item":"mug"} x`, `["mug"]`,
		"\xef\xbb\xbf{\"item\":\"mug\"}", `{"item":"mug","size":1.}`, `{"item":"mug",}`} {
		res, err := task.InvokeFunction(context.Background(), "shop_order", []byte(args))
		if err != nil || !res.IsError || res.Error.Kind != runtime.KindInvalidArguments {
			t.Errorf("arguments %s: %v %+v, want invalid_arguments", args, err, res)
		}
	}
	res, err := task.InvokeFunction(context.Background(), "shop_order", []byte(" {\"item\":\"mug\"}\n\t "))
	if err != nil || res.IsError {
		t.Errorf("an object with white space around it: %v %+v", err, res)
	}
}

func TestResultText(t *testing.T) {
	t.Parallel()
	task := newTask(t, mustLoadSrc(t, orderManifest), tool.TaskConfig{})
	res := mustInvoke(t, task, "greet", nil)
	if res.Text() != "# Hello\n" || string(res.OutputJSON) != `"# Hello\n"` {
		t.Fatalf("Text() = %q (OutputJSON %s), want the plain string", res.Text(), res.OutputJSON)
	}
	res = mustInvoke(t, task, "order", map[string]any{"item": "mug"})
	if res.Text() != string(res.OutputJSON) || res.Text()[0] != '{' {
		t.Fatalf("Text() = %q, want the compact JSON", res.Text())
	}
	res = mustInvoke(t, task, "order", map[string]any{})
	if !res.IsError || res.Text() != string(res.OutputJSON) || res.Text()[:9] != `{"error":` {
		t.Fatalf("error Text() = %q, want OutputJSON", res.Text())
	}
}
