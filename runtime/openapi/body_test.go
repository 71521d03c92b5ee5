package openapi_test

import (
	"bytes"
	"context"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"

	tool "github.com/commonagents-go/tool"
)

// bodyDoc has a form-urlencoded body with Stripe's encoding object, a multipart body without files, one with a
// file, and operations answering text and CSV.
const bodyDoc = `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{
"/v1/customers":{"post":{"operationId":"PostCustomers","requestBody":{"required":true,"content":{"application/x-www-form-urlencoded":{
  "encoding":{"expand":{"explode":true,"style":"deepObject"},"metadata":{"explode":true,"style":"deepObject"},"items":{"explode":true,"style":"deepObject"},"tags":{"explode":false,"style":"form"},"raw":{"contentType":"application/json"}},
  "schema":{"type":"object","properties":{"email":{"type":"string"},"expand":{"type":"array","items":{"type":"string"}},
    "metadata":{"type":"object","additionalProperties":{"type":"string"}},
    "items":{"type":"array","items":{"type":"object","properties":{"price":{"type":"string"},"quantity":{"type":"integer"}}}},
    "tags":{"type":"array","items":{"type":"string"}},"ids":{"type":"array","items":{"type":"integer"}},
    "raw":{"type":"object"}}}}}},"responses":{"200":{"description":"ok"}}}},
"/upload":{"post":{"operationId":"upload","requestBody":{"content":{"multipart/form-data":{"schema":{"type":"object","properties":{
    "title":{"type":"string"},"labels":{"type":"array","items":{"type":"string"}},"meta":{"type":"object","properties":{"a":{"type":"integer"}}}}}}}},"responses":{"200":{"description":"ok"}}}},
"/file":{"post":{"operationId":"file","requestBody":{"content":{"multipart/form-data":{"schema":{"type":"object","properties":{
    "file":{"type":"string","format":"binary"}}}}}},"responses":{"200":{"description":"ok"}}}},
"/markdown":{"post":{"operationId":"render","requestBody":{"content":{"text/x-markdown":{"schema":{"type":"string"}},"text/plain":{"schema":{"type":"string"}}}},"responses":{"200":{"description":"ok"}}}},
"/text":{"get":{"operationId":"text","responses":{"200":{"description":"ok"}}}},
"/csv":{"get":{"operationId":"csv","responses":{"200":{"description":"ok"}}}}
}}`

// TestFormBody: a form-urlencoded body follows the document's encoding and Stripe's nesting.
func TestFormBody(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	tl := loadDoc(t, srv, bodyDoc, "", "")
	res := invokeOnce(t, tl, "PostCustomers", map[string]any{"body": map[string]any{
		"email":    "a+b@example.com",
		"expand":   []any{"sources", "tax"},
		"metadata": map[string]any{"order": "6735", "note": "a&b=c"},
		"items":    []any{map[string]any{"price": "price_1", "quantity": 2}},
		"tags":     []any{"x", "y"},
		"ids":      []any{1, 2},
		"raw":      map[string]any{"k": true},
	}})
	if res.IsError {
		t.Fatal(res.Error)
	}
	r := srv.last(t)
	if ct := r.Header.Get("Content-Type"); ct != "application/x-www-form-urlencoded" {
		t.Errorf("Content-Type %q", ct)
	}
	got, err := url.ParseQuery(string(r.Body))
	if err != nil {
		t.Fatal(err)
	}
	want := url.Values{
		"email":              {"a+b@example.com"},
		"expand[]":           {"sources", "tax"},
		"metadata[order]":    {"6735"},
		"metadata[note]":     {"a&b=c"},
		"items[0][price]":    {"price_1"},
		"items[0][quantity]": {"2"},
		"tags":               {"x,y"},
		"ids":                {"1", "2"},
		"raw":                {`{"k":true}`},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("form body %s\n got %v\nwant %v", r.Body, got, want)
	}
	if len(tl.Skipped()) != 0 {
		t.Errorf("Skipped %+v: want none (the file upload is a multipart body with a file part)", tl.Skipped())
	}
}

// TestTextBody: a text body is the body parameter, a string, sent as is.
func TestTextBody(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	tl := loadDoc(t, srv, bodyDoc, "", "")
	if res := invokeOnce(t, tl, "render", map[string]any{"body": "# Title\n*hi*"}); res.IsError {
		t.Fatal(res.Error)
	}
	if r := srv.last(t); r.Header.Get("Content-Type") != "text/plain" || string(r.Body) != "# Title\n*hi*" {
		t.Errorf("%s %q", r.Header.Get("Content-Type"), r.Body)
	}
	if res := invokeOnce(t, tl, "render", map[string]any{"body": 5}); !res.IsError {
		t.Error("a number sent as a text body")
	}
}

// TestMultipartBody: a multipart body without files sends a part per property.
func TestMultipartBody(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	tl := loadDoc(t, srv, bodyDoc, "", "")
	res := invokeOnce(t, tl, "upload", map[string]any{"body": map[string]any{
		"title": "Report", "labels": []any{"a", "b"}, "meta": map[string]any{"a": 1}}})
	if res.IsError {
		t.Fatal(res.Error)
	}
	r := srv.last(t)
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		t.Fatalf("Content-Type %q", r.Header.Get("Content-Type"))
	}
	mr := multipart.NewReader(bytes.NewReader(r.Body), params["boundary"])
	var parts []string
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(p)
		parts = append(parts, p.FormName()+"|"+p.Header.Get("Content-Type")+"|"+string(data))
	}
	want := []string{"labels||a", "labels||b", `meta|application/json|{"a":1}`, "title||Report"}
	if !reflect.DeepEqual(parts, want) {
		t.Errorf("parts %q, want %q", parts, want)
	}
}

// TestNonJSONResponseIsText: a response whose Content-Type is not JSON is returned as text, even when it would
// parse as JSON.
func TestNonJSONResponseIsText(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v3/text":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = io.WriteString(w, "123")
		case "/v3/csv":
			w.Header().Set("Content-Type", "text/csv")
			_, _ = io.WriteString(w, "a,b\n1,2\n")
		}
	}))
	defer srv.Close()
	m := docManifest(t, &server{Server: srv}, bodyDoc, "", "")
	tl, err := tool.Load(context.Background(), []byte(m))
	if err != nil {
		t.Fatal(err)
	}
	for action, want := range map[string]string{"text": "123", "csv": "a,b\n1,2\n"} {
		res := invokeOnce(t, tl, action, nil)
		if res.IsError || res.Output != want {
			t.Errorf("%s: output %#v (%+v), want %q", action, res.Output, res.Error, want)
		}
	}
}

// TestBodyMediaType: the request body is sent with the JSON media type the operation accepts, application/json
// when it is one of several.
func TestBodyMediaType(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	doc := `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{
"/patch":{"patch":{"operationId":"patchItem","requestBody":{"required":true,"content":{"application/merge-patch+json":{"schema":{"type":"object"}}}},"responses":{"200":{"description":"ok"}}}},
"/both":{"post":{"operationId":"postItem","requestBody":{"required":true,"content":{"application/hal+json":{"schema":{"type":"object"}},"application/json":{"schema":{"type":"object"}}}},"responses":{"200":{"description":"ok"}}}},
"/charset":{"post":{"operationId":"charset","requestBody":{"required":true,"content":{"application/vnd.api+json; charset=utf-8":{"schema":{"type":"object"}}}},"responses":{"200":{"description":"ok"}}}}
}}`
	tl := loadDoc(t, srv, doc, "", "")
	tests := map[string]string{
		"patchItem": "application/merge-patch+json",
		"postItem":  "application/json",
		"charset":   "application/vnd.api+json; charset=utf-8",
	}
	for action, want := range tests {
		res := invokeOnce(t, tl, action, map[string]any{"body": map[string]any{"name": "x"}})
		if res.IsError {
			t.Fatalf("%s: %+v", action, res.Error)
		}
		r := srv.last(t)
		if got := r.Header.Values("Content-Type"); len(got) != 1 || got[0] != want {
			t.Errorf("%s: Content-Type %q, want %q", action, got, want)
		}
		if string(r.Body) != `{"name":"x"}` {
			t.Errorf("%s: body %s", action, r.Body)
		}
	}
}

// TestBodyOnBodilessMethod: a GET operation whose document gives it a request body sends it (search APIs take
// their query so); a HEAD operation with one is skipped with the reason, and binding an action to it is a load
// problem.
func TestBodyOnBodilessMethod(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	doc := `{"openapi":"3.1.0","info":{"title":"t","version":"1"},"paths":{"/search":{
"get":{"operationId":"search","requestBody":{"required":true,"content":{"application/json":{"schema":{"type":"object"}}}},"responses":{"200":{"description":"ok"}}},
"head":{"operationId":"probe","requestBody":{"content":{"application/json":{"schema":{"type":"object"}}}},"responses":{"200":{"description":"ok"}}},
"post":{"operationId":"searchPost","requestBody":{"required":true,"content":{"application/json":{"schema":{"type":"object"}}}},"responses":{"200":{"description":"ok"}}}}}}`
	tl := loadDoc(t, srv, doc, "", "")
	if fns := tl.Functions(tool.Capability{}); len(fns) != 2 {
		t.Errorf("%d functions, want search and searchPost", len(fns))
	}
	skipped := tl.Skipped()
	if len(skipped) != 1 || skipped[0].Name != "probe" || !strings.Contains(skipped[0].Reason, "carries no body") {
		t.Fatalf("Skipped() = %+v, want probe with its reason", skipped)
	}
	res := invokeOnce(t, tl, "search", map[string]any{"body": map[string]any{"query": "cats"}})
	if res.IsError {
		t.Fatalf("search: %+v", res.Error)
	}
	if r := srv.last(t); r.Method != "GET" || string(r.Body) != `{"query":"cats"}` || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("sent %s %s body %s", r.Method, r.Header.Get("Content-Type"), r.Body)
	}
	_, err := tool.Load(context.Background(), []byte(docManifest(t, srv, doc, "", `actions:
  - name: find
    description: Finds.
    execute:
      openapi: {operation_id: probe}
`)))
	if ps := problems(t, err); !hasProblem(ps, "actions[0].execute.openapi.operation_id", "invalid", "carries no body") {
		t.Errorf("problems = %+v", ps)
	}
}
