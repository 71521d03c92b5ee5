package openapi_test

import (
	"strings"
	"testing"

	"github.com/commonagents-go/tool/runtime"
)

// recursiveDoc is an OpenAPI 3.0 document whose request schemas recur (a tree of nodes), use 3.0's nullable and
// boolean exclusive bounds, and are shared by two operations through a parameter component.
const recursiveDoc = `{"openapi":"3.0.3","info":{"title":"t","version":"1"},
"paths":{"/trees":{"post":{"operationId":"plant","parameters":[{"$ref":"#/components/parameters/Depth"}],
  "requestBody":{"required":true,"content":{"application/json":{"schema":{"$ref":"#/components/schemas/Node"}}}},
  "responses":{"200":{"description":"ok"}}}},
 "/trees/{id}":{"get":{"operationId":"look","parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"string"}},
  {"$ref":"#/components/parameters/Depth"}],"responses":{"200":{"description":"ok"}}}}},
"components":{
 "parameters":{"Depth":{"name":"depth","in":"query","schema":{"type":"integer","minimum":0,"exclusiveMinimum":true,"nullable":true,"default":0}}},
 "schemas":{"Node":{"type":"object","required":["name"],"properties":{"name":{"type":"string","nullable":true},
   "children":{"type":"array","items":{"$ref":"#/components/schemas/Node"}}}},
  "Unused":{"type":"object","description":"a response-only schema"}}}}`

// TestArgumentsValidatedAgainstTheDocument pins that an operation's arguments are validated against its schemas as
// the document writes them (issue 29): a recursive schema validates at every depth, where the copy shown to the LLM
// (converted, OpenAPI 3.0) stops at {}; 3.0's nullable and boolean exclusive bounds keep their meaning; a parameter
// component shared by two operations validates in both.
func TestArgumentsValidatedAgainstTheDocument(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	tl := loadDoc(t, srv, recursiveDoc, "", "")
	if s := tl.Skipped(); len(s) != 0 {
		t.Fatalf("skipped: %+v", s)
	}
	// depth's default 0 fails its own schema (exclusiveMinimum): dropped with a warning, for each operation.
	warned := 0
	for _, w := range tl.Warnings() {
		if strings.Contains(w.Detail, `default of parameter "depth"`) {
			warned++
		}
	}
	if warned != 2 {
		t.Errorf("%d warnings about depth's default, want 2: %v", warned, tl.Warnings())
	}
	deep := map[string]any{"name": "a", "children": []any{map[string]any{"name": "b",
		"children": []any{map[string]any{"children": []any{}}}}}} // the third level lacks its required name
	for _, c := range []struct {
		name, action string
		args         map[string]any
		valid        bool
	}{
		{"a valid tree", "plant", map[string]any{"body": map[string]any{"name": "a", "children": []any{
			map[string]any{"name": nil}}}}, true},
		{"a missing name three levels down", "plant", map[string]any{"body": deep}, false},
		{"depth at the exclusive minimum", "plant", map[string]any{"body": map[string]any{"name": "a"}, "depth": 0}, false},
		{"depth above it", "plant", map[string]any{"body": map[string]any{"name": "a"}, "depth": 1}, true},
		{"depth null", "look", map[string]any{"id": "x", "depth": nil}, true},
		{"depth at the minimum, shared parameter", "look", map[string]any{"id": "x", "depth": 0}, false},
	} {
		before := srv.count()
		res := invokeOnce(t, tl, c.action, c.args)
		if c.valid != !res.IsError {
			t.Errorf("%s: accepted = %v, want %v (%+v)", c.name, !res.IsError, c.valid, res.Error)
		}
		if !c.valid && (res.Error == nil || res.Error.Kind != runtime.KindInvalidArguments || srv.count() != before) {
			t.Errorf("%s: %+v, %d requests sent; want invalid_arguments and none", c.name, res.Error, srv.count()-before)
		}
	}
}

// sharedParamsDoc is an OpenAPI 3.0 document whose two operations write the same parameters byte for byte: one
// nullable with a type, one nullable without (3.0's nullable then wraps the schema in an anyOf).
const sharedParamsDoc = `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{
"/a":{"get":{"operationId":"a","parameters":[
  {"name":"n","in":"query","schema":{"type":"integer","nullable":true,"minimum":1,"description":"n"}},
  {"name":"m","in":"query","schema":{"nullable":true,"minimum":1,"description":"m"}}],"responses":{"200":{"description":"ok"}}}},
"/b":{"get":{"operationId":"b","parameters":[
  {"name":"n","in":"query","schema":{"type":"integer","nullable":true,"minimum":1,"description":"n"}},
  {"name":"m","in":"query","schema":{"nullable":true,"minimum":1,"description":"m"}}],"responses":{"200":{"description":"ok"}}}}}}`

// TestParametersWrittenAlikeValidateAlike pins that parameters written alike in several operations, read once and
// shared, keep their 3.0 meaning in each operation: null allowed (nullable), the minimum kept.
func TestParametersWrittenAlikeValidateAlike(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	tl := loadDoc(t, srv, sharedParamsDoc, "", "")
	for _, action := range []string{"a", "b"} {
		for _, c := range []struct {
			args  map[string]any
			valid bool
		}{
			{map[string]any{"n": nil, "m": nil}, true},
			{map[string]any{"n": 2, "m": 2}, true},
			{map[string]any{"n": 0}, false},
			{map[string]any{"m": 0}, false},
		} {
			res := invokeOnce(t, tl, action, c.args)
			if c.valid != !res.IsError {
				t.Errorf("%s %v: accepted = %v, want %v (%+v)", action, c.args, !res.IsError, c.valid, res.Error)
			}
		}
	}
}
