package openapi_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	tool "github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/runtime"
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
		if !res.IsError || res.Error.Kind != runtime.KindInvalidArguments {
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

// writeDoc writes an OpenAPI document into a temporary file and returns its path.
func writeDoc(t *testing.T, doc string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "doc.json")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// docManifest is a manifest whose top-level block reads doc and sends to srv under /v3, with extra block lines
// (indented by two spaces) and manifest lines after it.
func docManifest(t *testing.T, srv *server, doc, block, rest string) string {
	t.Helper()
	return "kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: api\ndescription: An API.\nopenapi:\n  url: " +
		writeDoc(t, doc) + "\n  base_url: " + srv.URL + "/v3\n" + block + rest
}

func loadDoc(t *testing.T, srv *server, doc, block, rest string) *tool.Tool {
	t.Helper()
	tl, err := tool.Load(context.Background(), []byte(docManifest(t, srv, doc, block, rest)),
		tool.WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return tl
}

// invokeOnce runs one action in a fresh task.
func invokeOnce(t *testing.T, tl *tool.Tool, action string, args map[string]any) *tool.Result {
	t.Helper()
	task, err := tl.NewTask(context.Background(), tool.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer task.Close(context.Background())
	res, err := task.Invoke(context.Background(), action, args)
	if err != nil {
		t.Fatalf("Invoke %s: %v", action, err)
	}
	return res
}

// pathDoc has paths whose literal text net/url cannot send unescaped, two parameters in one segment and an array
// path parameter.
const pathDoc = `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{
"/café/{id}":{"get":{"operationId":"cafe","parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}},
"/a|b^c/100%/{id}":{"get":{"operationId":"odd","parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}},
"/items/{a}{b}":{"get":{"operationId":"pair","parameters":[{"name":"a","in":"path","required":true,"schema":{"type":"string"}},{"name":"b","in":"path","required":true,"schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}},
"/files/.{ext}":{"get":{"operationId":"dotted","parameters":[{"name":"ext","in":"path","required":true,"schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}},
"/list/{ids}":{"get":{"operationId":"list","parameters":[{"name":"ids","in":"path","required":true,"schema":{"type":"array","items":{"type":"string"}}}],"responses":{"200":{"description":"ok"}}}},
"/up/../{id}":{"get":{"operationId":"up","parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}},
"/up2/%2e%2E/{id}":{"get":{"operationId":"up2","parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"string"}}],"responses":{"200":{"description":"ok"}}}}
}}`

// TestPathEscaping: literal path text invalid in an escaped URL path is escaped at load, so the %2F of a value
// stays %2F on the wire; values (alone, together or as array items) that make a "." or ".." piece are refused;
// literal dot segments skip the operation.
func TestPathEscaping(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	tl := loadDoc(t, srv, pathDoc, "", "")
	tests := []struct {
		action string
		args   map[string]any
		uri    string // the request target sent; "" when the call must be invalid_arguments and send nothing
	}{
		{"cafe", map[string]any{"id": "x/y"}, "/v3/caf%C3%A9/x%2Fy"},
		{"cafe", map[string]any{"id": "x/../../../admin"}, ""},
		{"odd", map[string]any{"id": "a/b"}, "/v3/a%7Cb%5Ec/100%25/a%2Fb"},
		{"pair", map[string]any{"a": "x", "b": "y"}, "/v3/items/xy"},
		{"pair", map[string]any{"a": ".", "b": "."}, ""},
		{"pair", map[string]any{"a": ".", "b": ""}, ""},
		{"pair", map[string]any{"a": "x/.", "b": "./y"}, ""},
		{"dotted", map[string]any{"ext": "txt"}, "/v3/files/.txt"},
		{"dotted", map[string]any{"ext": "."}, ""},
		{"list", map[string]any{"ids": []any{"a", "b/c"}}, "/v3/list/a,b%2Fc"},
		{"list", map[string]any{"ids": []any{"a", "x/.."}}, ""},
		{"list", map[string]any{"ids": []any{".."}}, ""},
	}
	for _, tt := range tests {
		before := srv.count()
		res := invokeOnce(t, tl, tt.action, tt.args)
		if tt.uri == "" {
			if !res.IsError || res.Error.Kind != runtime.KindInvalidArguments || srv.count() != before {
				t.Errorf("%s %v: want invalid_arguments and no request; got %+v, %d requests", tt.action, tt.args,
					res.Error, srv.count()-before)
			}
			continue
		}
		if res.IsError {
			t.Errorf("%s %v: %+v", tt.action, tt.args, res.Error)
			continue
		}
		if r := srv.last(t); r.URI != tt.uri {
			t.Errorf("%s %v: sent %s, want %s", tt.action, tt.args, r.URI, tt.uri)
		}
	}
	skipped := map[string]string{}
	for _, s := range tl.Skipped() {
		skipped[s.Name] = s.Reason
	}
	for _, id := range []string{"up", "up2"} {
		if !strings.Contains(skipped[id], `".." segment`) {
			t.Errorf("%s: skipped for %q, want a reason naming the dot segment", id, skipped[id])
		}
	}
}

// TestCookieMerged: cookie parameters join the block's own Cookie header in one header, whose cookies win.
func TestCookieMerged(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	doc := `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{"/me":{"get":{"operationId":"me",
"parameters":[{"name":"session","in":"cookie","schema":{"type":"string"}},{"name":"lang","in":"cookie","schema":{"type":"string"}}],
"responses":{"200":{"description":"ok"}}}}}}`
	tests := []struct {
		block string
		want  string
	}{
		{"", "session=llm; lang=en"},
		{"  headers:\n    Cookie: \"session=abc\"\n", "session=abc; lang=en"},
		{"  headers:\n    cookie: \"a=1; b=2\"\n", "a=1; b=2; session=llm; lang=en"},
	}
	for _, tt := range tests {
		tl := loadDoc(t, srv, doc, tt.block, "")
		res := invokeOnce(t, tl, "me", map[string]any{"session": "llm", "lang": "en"})
		if res.IsError {
			t.Fatalf("%+v", res.Error)
		}
		if got := srv.last(t).Header.Values("Cookie"); len(got) != 1 || got[0] != tt.want {
			t.Errorf("block %q: Cookie headers %q, want [%q]", tt.block, got, tt.want)
		}
	}
	bad := strings.Replace(doc, `"name":"lang"`, `"name":"lang;x"`, 1)
	tl := loadDoc(t, srv, bad, "", "")
	if s := tl.Skipped(); len(s) != 1 || !strings.Contains(s[0].Reason, "not a valid cookie name") {
		t.Errorf("Skipped() = %+v", s)
	}
}
