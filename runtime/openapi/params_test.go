package openapi_test

import (
	"context"
	"net/url"
	"reflect"
	"testing"

	tool "github.com/commonagents-go/tool"
)

// paramsDoc has one parameter per serialization case: an exploded object without additionalProperties (the
// default for query objects), one that allows more, deepObject arrays and objects, Stripe's anyOf [object,
// integer], every array style, and the path styles label and matrix.
const paramsDoc = `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{
"/search":{"get":{"operationId":"search","parameters":[
 {"name":"scope","in":"query","schema":{"type":"string"}},
 {"name":"filter","in":"query","schema":{"type":"object","properties":{"state":{"type":"string"},"label":{"type":"string"}}}},
 {"name":"extra","in":"query","schema":{"type":"object","additionalProperties":true}},
 {"name":"expand","in":"query","style":"deepObject","explode":true,"schema":{"type":"array","items":{"type":"string"}}},
 {"name":"where","in":"query","style":"deepObject","explode":true,"schema":{"type":"object","properties":{"state":{"type":"string"},"owner":{"type":"object","properties":{"login":{"type":"string"}}}}}},
 {"name":"created","in":"query","style":"deepObject","explode":true,"schema":{"anyOf":[{"type":"object","properties":{"gt":{"type":"integer"},"lt":{"type":"integer"}}},{"type":"integer"}]}},
 {"name":"ids","in":"query","schema":{"type":"array","items":{"type":"integer"}}},
 {"name":"csv","in":"query","explode":false,"schema":{"type":"array","items":{"type":"string"}}},
 {"name":"space","in":"query","style":"spaceDelimited","schema":{"type":"array","items":{"type":"string"}}},
 {"name":"pipe","in":"query","style":"pipeDelimited","schema":{"type":"array","items":{"type":"string"}}},
 {"name":"pipes","in":"query","style":"pipeDelimited","explode":true,"schema":{"type":"array","items":{"type":"string"}}},
 {"name":"ck","in":"cookie","schema":{"type":"array","items":{"type":"string"}}},
 {"name":"hd","in":"header","schema":{"type":"array","items":{"type":"string"}}}
],"responses":{"200":{"description":"ok"}}}},
"/items/{label}/{matrix}/{point}":{"get":{"operationId":"item","parameters":[
 {"name":"label","in":"path","required":true,"style":"label","schema":{"type":"array","items":{"type":"string"}}},
 {"name":"matrix","in":"path","required":true,"style":"matrix","explode":true,"schema":{"type":"array","items":{"type":"string"}}},
 {"name":"point","in":"path","required":true,"explode":true,"schema":{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"}}}}
],"responses":{"200":{"description":"ok"}}}}
}}`

// TestObjectParameterInjection: an exploded object parameter may produce only the keys its schema declares
// (additionalProperties must be explicit to allow more), and never the name of another query parameter, bound or
// not: anything else is a recoverable invalid_arguments error and nothing is sent.
func TestObjectParameterInjection(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	tl := loadDoc(t, srv, paramsDoc, "", "")
	task, err := tl.NewTask(context.Background(), tool.TaskConfig{Capability: tool.Capability{
		Include: []string{"search"}, Bindings: map[string]any{"scope": "acme-only"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer task.Close(context.Background())
	refused := []map[string]any{
		{"filter": map[string]any{"scope": "all-tenants", "admin": "true"}}, // measured in the issue
		{"filter": map[string]any{"admin": "true"}},                         // not declared
		{"filter": map[string]any{"state": "open", "scope": "all-tenants"}},
		{"extra": map[string]any{"scope": "all-tenants"}}, // allowed more, but not another parameter's name
		{"extra": map[string]any{"ids": "1"}},             // nor an unbound one's
		{"where": map[string]any{"admin": "true"}},        // deepObject keys are declared too
		{"created": map[string]any{"gte": 1}},
	}
	for _, args := range refused {
		before := srv.count()
		res, err := task.Invoke(context.Background(), "search", args)
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError || res.Error.Kind != tool.KindInvalidArguments {
			t.Errorf("%v: result %+v, want invalid_arguments", args, res.Error)
		}
		if srv.count() != before {
			t.Errorf("%v: a request was sent: %s", args, srv.last(t).RawQuery)
		}
	}
	for args, want := range map[*map[string]any]url.Values{
		{"filter": map[string]any{"state": "open"}}:              {"scope": {"acme-only"}, "state": {"open"}},
		{"extra": map[string]any{"anything": "1"}}:               {"scope": {"acme-only"}, "anything": {"1"}},
		{"filter": map[string]any{"state": "o", "label": "bug"}}: {"scope": {"acme-only"}, "state": {"o"}, "label": {"bug"}},
	} {
		res, err := task.Invoke(context.Background(), "search", *args)
		if err != nil || res.IsError {
			t.Fatalf("%v: %v %+v", *args, err, res)
		}
		if got, _ := url.ParseQuery(srv.last(t).RawQuery); !reflect.DeepEqual(got, want) {
			t.Errorf("%v: query %v, want %v", *args, got, want)
		}
	}
}

// TestQueryStyles checks the wire form of every query style against a recording server.
func TestQueryStyles(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	tl := loadDoc(t, srv, paramsDoc, "", "")
	tests := []struct {
		name string
		args map[string]any
		want string // the raw query as sent
	}{
		{"deepObject array", map[string]any{"expand": []any{"customer", "invoice.lines"}},
			"expand%5B%5D=customer&expand%5B%5D=invoice.lines"},
		{"deepObject nested object", map[string]any{"where": map[string]any{"state": "open", "owner": map[string]any{"login": "octo"}}},
			"where%5Bowner%5D%5Blogin%5D=octo&where%5Bstate%5D=open"},
		{"anyOf object, given an object", map[string]any{"created": map[string]any{"gt": 1, "lt": 9}},
			"created%5Bgt%5D=1&created%5Blt%5D=9"},
		{"anyOf object, given an integer", map[string]any{"created": 1700000000}, "created=1700000000"},
		{"form exploded array", map[string]any{"ids": []any{1, 2}}, "ids=1&ids=2"},
		{"form array", map[string]any{"csv": []any{"a", "b c"}}, "csv=a,b+c"},
		{"spaceDelimited", map[string]any{"space": []any{"a", "b"}}, "space=a%20b"},
		{"pipeDelimited", map[string]any{"pipe": []any{"a", "b"}}, "pipe=a%7Cb"},
		{"pipeDelimited exploded", map[string]any{"pipes": []any{"a", "b"}}, "pipes=a&pipes=b"},
	}
	for _, tt := range tests {
		res := invokeOnce(t, tl, "search", tt.args)
		if res.IsError {
			t.Errorf("%s: %+v", tt.name, res.Error)
			continue
		}
		if got := srv.last(t).RawQuery; got != tt.want {
			t.Errorf("%s: query %q, want %q", tt.name, got, tt.want)
		}
	}
	if res := invokeOnce(t, tl, "search", map[string]any{"ck": []any{"a", "b"}, "hd": []any{"x", "y"}}); res.IsError {
		t.Fatal(res.Error)
	}
	if r := srv.last(t); r.Header.Get("Cookie") != "ck=a; ck=b" || r.Header.Get("hd") != "x,y" {
		t.Errorf("cookie %q, header %q", r.Header.Get("Cookie"), r.Header.Get("hd"))
	}
	res := invokeOnce(t, tl, "item", map[string]any{"label": []any{"a", "b"}, "matrix": []any{"x", "y"},
		"point": map[string]any{"x": 1, "y": 2}})
	if res.IsError {
		t.Fatal(res.Error)
	}
	if got, want := srv.last(t).EscapedPath, "/v3/items/.a,b/;matrix=x;matrix=y/x=1,y=2"; got != want {
		t.Errorf("path %q, want %q", got, want)
	}
}
