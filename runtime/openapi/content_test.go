package openapi_test

import (
	"net/url"
	"strings"
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

// TestContentPathParameter pins that a path parameter described by JSON content is sent as its JSON text, escaped
// as one path segment (stream-io-api.com declares its path names this way).
func TestContentPathParameter(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	tl := loadDoc(t, srv, `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/files/{sel}/meta":{"get":{
"operationId":"meta","parameters":[{"name":"sel","in":"path","required":true,
 "content":{"application/json":{"schema":{"type":"object","required":["dir"],"properties":{"dir":{"type":"string"}}}}}}],
"responses":{"200":{"description":"ok"}}}}}}`, "", "")
	if s := tl.Skipped(); len(s) != 0 {
		t.Fatalf("skipped: %+v", s)
	}
	res := invokeOnce(t, tl, "meta", map[string]any{"sel": map[string]any{"dir": "a/b"}})
	if res.IsError {
		t.Fatalf("%+v", res.Error)
	}
	want := "/files/" + url.PathEscape(`{"dir":"a/b"}`) + "/meta"
	if r := srv.last(t); !strings.HasSuffix(r.EscapedPath, want) {
		t.Errorf("path %q, want it to end in %q", r.EscapedPath, want)
	}
	if res := invokeOnce(t, tl, "meta", map[string]any{"sel": map[string]any{}}); !res.IsError {
		t.Error("a value its content schema refuses was sent")
	}
	// Its JSON text is checked as any path value is (SPEC §4.4): no ".." piece between slashes, even escaped.
	if res := invokeOnce(t, tl, "meta", map[string]any{"sel": map[string]any{"dir": "a/../b"}}); !res.IsError {
		t.Error(`a ".." piece was sent`)
	}
}
