package openapi_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tool "github.com/commonagents-go/tool"
)

// Regression tests for the review of the openapi backend: each failed before its fix.

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
			if !res.IsError || res.Error.Kind != tool.KindInvalidArguments || srv.count() != before {
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

// TestNullableWithoutType: OpenAPI 3.0's nullable reference, {nullable: true, allOf: [{$ref}]}, accepts null.
func TestNullableWithoutType(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	doc := `{"openapi":"3.0.3","info":{"title":"t","version":"1"},
"components":{"schemas":{"User":{"type":"object","properties":{"name":{"type":"string"}}}}},
"paths":{"/items":{"post":{"operationId":"createItem",
"requestBody":{"required":true,"content":{"application/json":{"schema":{"type":"object","properties":{
 "owner":{"nullable":true,"description":"The owner.","allOf":[{"$ref":"#/components/schemas/User"}]}}}}}},
"responses":{"200":{"description":"ok"}}}}}}`
	tl := loadDoc(t, srv, doc, "", "")
	tests := []struct {
		owner any
		ok    bool
		body  string
	}{
		{nil, true, `{"owner":null}`},
		{map[string]any{"name": "ann"}, true, `{"owner":{"name":"ann"}}`},
		{"ann", false, ""},
	}
	for _, tt := range tests {
		before := srv.count()
		res := invokeOnce(t, tl, "createItem", map[string]any{"body": map[string]any{"owner": tt.owner}})
		if !tt.ok {
			if !res.IsError || srv.count() != before {
				t.Errorf("owner %v: accepted", tt.owner)
			}
			continue
		}
		if res.IsError {
			t.Errorf("owner %v: %s: %s", tt.owner, res.Error.Kind, res.Error.Message)
			continue
		}
		if got := string(srv.last(t).Body); got != tt.body {
			t.Errorf("owner %v: sent %s, want %s", tt.owner, got, tt.body)
		}
	}
	f, _ := functionByAction(tl.Functions(tool.Capability{}), "createItem")
	var s struct {
		Properties struct {
			Body struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"body"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(f.Parameters, &s); err != nil {
		t.Fatal(err)
	}
	want := `{"anyOf":[{"allOf":[{"properties":{"name":{"type":"string"}},"type":"object"}]},{"type":"null"}],"description":"The owner."}`
	if got := canonical(t, s.Properties.Body.Properties["owner"]); got != want {
		t.Errorf("owner schema %s, want %s", got, want)
	}
}

// TestBodyOnBodilessMethod: a GET or HEAD operation with a request body is skipped with the reason (its body could
// not be sent), and binding an action to one is a load problem.
func TestBodyOnBodilessMethod(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	doc := `{"openapi":"3.1.0","info":{"title":"t","version":"1"},"paths":{"/search":{
"get":{"operationId":"search","requestBody":{"required":true,"content":{"application/json":{"schema":{"type":"object"}}}},"responses":{"200":{"description":"ok"}}},
"head":{"operationId":"probe","requestBody":{"content":{"application/json":{"schema":{"type":"object"}}}},"responses":{"200":{"description":"ok"}}},
"post":{"operationId":"searchPost","requestBody":{"required":true,"content":{"application/json":{"schema":{"type":"object"}}}},"responses":{"200":{"description":"ok"}}}}}}`
	tl := loadDoc(t, srv, doc, "", "")
	fns := tl.Functions(tool.Capability{})
	if len(fns) != 1 || fns[0].Action != "searchPost" {
		t.Errorf("%d functions, want searchPost only", len(fns))
	}
	skipped := tl.Skipped()
	if len(skipped) != 2 {
		t.Fatalf("Skipped() = %+v, want search and probe", skipped)
	}
	for i, want := range []string{"search", "probe"} {
		if skipped[i].Name != want || !strings.Contains(skipped[i].Reason, "carries no body") {
			t.Errorf("skipped[%d] = %+v, want %s with its reason", i, skipped[i], want)
		}
	}
	_, err := tool.Load(context.Background(), []byte(docManifest(t, srv, doc, "", `actions:
  - name: find
    description: Finds.
    execute:
      openapi: {operation_id: search}
`)))
	if ps := problems(t, err); !hasProblem(ps, "actions[0].execute.openapi.operation_id", "invalid", "carries no body") {
		t.Errorf("problems = %+v", ps)
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

// TestDeclaredActionsAreTheSurface: when a declared action runs on openapi, the top-level block gives it the
// document, base URL and headers but expands into nothing, so an action may take its operation's name and a
// narrowed action has no unnarrowed twin. A declared action on another backend leaves the expansion alone.
func TestDeclaredActionsAreTheSurface(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	base := petstoreManifest(testdata(t, "petstore3.json"))
	opts := []tool.Option{tool.WithSettings(map[string]any{"base": srv.URL, "token": "t0k"}),
		tool.WithHTTPClient(srv.Client())}
	tests := []struct {
		name    string
		actions string
		want    []string
	}{
		{"own operation name", `
  - name: getPetById
    description: Reads a pet.
    execute:
      openapi: {operation_id: getPetById}`, []string{"getPetById"}},
		{"narrowed", `
  - name: delete_pet_one
    description: Deletes pet 1 only.
    parameters:
      properties:
        petId: {type: integer, enum: [1]}
      required: [petId]
    execute:
      openapi: {operation_id: deletePet}`, []string{"delete_pet_one"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl, err := tool.Load(context.Background(), []byte(base+"actions:"+tt.actions+"\n"), opts...)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range tl.Functions(tool.Capability{}) {
				got = append(got, f.Action)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("functions for %v, want %v", got, tt.want)
			}
		})
	}

	tl, err := tool.Load(context.Background(), []byte(base+`actions:
  - name: delete_pet_one
    description: Deletes pet 1 only.
    parameters:
      properties:
        petId: {type: integer, enum: [1]}
      required: [petId]
    execute:
      openapi: {operation_id: deletePet}
`), opts...)
	if err != nil {
		t.Fatal(err)
	}
	task, err := tl.NewTask(context.Background(), tool.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer task.Close(context.Background())
	if res, err := task.Invoke(context.Background(), "deletePet", map[string]any{"petId": 999}); err == nil && !res.IsError {
		t.Error("the expanded twin deletePet ran")
	}
	res, err := task.Invoke(context.Background(), "delete_pet_one", map[string]any{"petId": 999})
	if err != nil || !res.IsError {
		t.Errorf("petId 999 passed the narrowed schema: %v %+v", err, res)
	}
	res, err = task.Invoke(context.Background(), "delete_pet_one", map[string]any{"petId": 1})
	if err != nil || res.IsError {
		t.Fatalf("Invoke: %v %+v", err, res)
	}
	if r := srv.last(t); r.Method != "DELETE" || r.EscapedPath != "/v3/pet/1" || r.Header.Get("Authorization") != "Bearer t0k" {
		t.Errorf("sent %s %s with Authorization %q", r.Method, r.EscapedPath, r.Header.Get("Authorization"))
	}
	if n := srv.count(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}

	cel, err := tool.Load(context.Background(), []byte(base+`actions:
  - name: hello
    description: Says hello.
    execute:
      cel: {expression: "'hi'"}
`), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(cel.Functions(tool.Capability{})); n != 19 {
		t.Errorf("%d functions, want hello and 18 operations", n)
	}
}
