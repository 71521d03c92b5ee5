package openapi_test

import (
	"testing"
)

// contentDoc has query and header parameters described by content in application/json, as the directory's
// apideck and others write JSON-encoded values.
const contentDoc = `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/files":{"get":{"operationId":"list",
"parameters":[
 {"name":"filter","in":"query","content":{"application/json":{"schema":{"type":"object","properties":{"name":{"type":"string"}}}}}},
 {"name":"X-Meta","in":"header","content":{"application/json":{"schema":{"type":"array","items":{"type":"integer"}}}}}],
"responses":{"200":{"description":"ok"}}}}}}`

// TestContentParameters pins that a parameter described by JSON content becomes an action parameter with that
// content's schema, and its value is sent as JSON text in its location.
func TestContentParameters(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	tl := loadDoc(t, srv, contentDoc, "", "")
	if s := tl.Skipped(); len(s) != 0 {
		t.Fatalf("skipped: %+v", s)
	}
	res := invokeOnce(t, tl, "list", map[string]any{"filter": map[string]any{"name": "a&b"}, "X-Meta": []any{1, 2}})
	if res.IsError {
		t.Fatalf("%+v", res.Error)
	}
	r := srv.last(t)
	if r.RawQuery != "filter=%7B%22name%22%3A%22a%26b%22%7D" || r.Header.Get("X-Meta") != "[1,2]" {
		t.Errorf("query %q, X-Meta %q", r.RawQuery, r.Header.Get("X-Meta"))
	}
	if res := invokeOnce(t, tl, "list", map[string]any{"filter": "not an object"}); !res.IsError {
		t.Error("a value its content schema refuses was sent")
	}
}
