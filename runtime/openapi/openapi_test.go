package openapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tool "github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/internal/leakcheck"
	"github.com/commonagents-go/tool/runtime"
)

// received is one request as the test server saw it.
type received struct {
	Method, EscapedPath, RawQuery string
	URI                           string // the request line's target, as sent
	Header                        http.Header
	Body                          []byte
}

// server is an httptest server that records requests and answers {"ok":true}.
type server struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []received
}

func newServer(t *testing.T) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.reqs = append(s.reqs, received{Method: r.Method, EscapedPath: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery,
			URI: r.RequestURI, Header: r.Header.Clone(), Body: body})
		s.mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/missing") {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"message":"not found"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) last(t *testing.T) received {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reqs) == 0 {
		t.Fatal("the server received no request")
	}
	return s.reqs[len(s.reqs)-1]
}

func (s *server) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

func testdata(t testing.TB, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// petstoreManifest expands the Petstore 3.0 document; its servers are relative, so base_url points at the test
// server.
func petstoreManifest(doc string) string {
	return `kind: commonagents.info/v1beta2/tool
namespace: tests
name: petstore
description: The Swagger Petstore.
settings:
  properties:
    base: {type: string}
    token: {type: string, format: password}
openapi:
  url: ` + doc + `
  base_url: "{settings.base}/v3"
  headers:
    Authorization: "Bearer {settings.token}"
`
}

type factLog struct {
	mu   sync.Mutex
	list []tool.Fact
}

func (f *factLog) Observe(_ context.Context, fact tool.Fact) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.list = append(f.list, fact)
}

func (f *factLog) named(name string) []tool.Fact {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []tool.Fact
	for _, x := range f.list {
		if x.Name == name {
			out = append(out, x)
		}
	}
	return out
}

func loadPetstore(t *testing.T, srv *server, opts ...tool.Option) *tool.Tool {
	t.Helper()
	opts = append([]tool.Option{tool.WithSettings(map[string]any{"base": srv.URL, "token": "s3cret-token"}),
		tool.WithHTTPClient(srv.Client())}, opts...)
	tl, err := tool.Load(context.Background(), []byte(petstoreManifest(testdata(t, "petstore3.json"))), opts...)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return tl
}

func functionByAction(fns []tool.Function, action string) (tool.Function, bool) {
	for _, f := range fns {
		if f.Action == action {
			return f, true
		}
	}
	return tool.Function{}, false
}

func TestPetstoreFunctions(t *testing.T) {
	t.Parallel()
	obs := &factLog{}
	tl := loadPetstore(t, newServer(t), tool.WithObserver(obs))
	fns := tl.Functions(tool.Capability{})
	if len(fns) != 19 {
		t.Errorf("got %d functions, want 19 (19 operations; uploadFile's octet-stream body is a raw body)", len(fns))
	}
	tests := []struct {
		action      string
		description string
		schema      string
	}{
		{"getPetById", "Find pet by ID\n\nReturns a single pet",
			`{"additionalProperties":false,"properties":{"petId":{"description":"ID of pet to return","format":"int64","type":"integer"}},"required":["petId"],"type":"object"}`},
		{"findPetsByStatus", "Finds Pets by status\n\nMultiple status values can be provided with comma separated strings",
			`{"additionalProperties":false,"properties":{"status":{"default":"available","description":"Status values that need to be considered for filter","enum":["available","pending","sold"],"type":"string"}},"required":[],"type":"object"}`},
		{"deletePet", "Deletes a pet",
			`{"additionalProperties":false,"properties":{"api_key":{"type":"string"},"petId":{"description":"Pet id to delete","format":"int64","type":"integer"}},"required":["petId"],"type":"object"}`},
		{"getInventory", "Returns pet inventories by status\n\nReturns a map of status codes to quantities",
			`{"additionalProperties":false,"properties":{},"required":[],"type":"object"}`},
	}
	for _, tt := range tests {
		t.Run(tt.action, func(t *testing.T) {
			f, ok := functionByAction(fns, tt.action)
			if !ok {
				t.Fatalf("no function for %s", tt.action)
			}
			if f.Name != "petstore_"+tt.action {
				t.Errorf("name = %q", f.Name)
			}
			if f.Description != tt.description {
				t.Errorf("description = %q, want %q", f.Description, tt.description)
			}
			if got := canonical(t, f.Parameters); got != canonical(t, []byte(tt.schema)) {
				t.Errorf("schema =\n%s\nwant\n%s", got, canonical(t, []byte(tt.schema)))
			}
		})
	}

	// The body of addPet is the Pet schema, its $refs (Category, Tag) inlined.
	f, _ := functionByAction(fns, "addPet")
	var s struct {
		Properties map[string]struct {
			Required   []string                   `json:"required"`
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(f.Parameters, &s); err != nil {
		t.Fatal(err)
	}
	body := s.Properties["body"]
	if !reflect.DeepEqual(s.Required, []string{"body"}) || !reflect.DeepEqual(body.Required, []string{"name", "photoUrls"}) {
		t.Errorf("addPet required = %v, body required = %v", s.Required, body.Required)
	}
	if cat := string(body.Properties["category"]); !strings.Contains(cat, `"properties"`) || strings.Contains(cat, "$ref") {
		t.Errorf("category is not inlined: %s", cat)
	}

	if skipped := tl.Skipped(); len(skipped) != 0 {
		t.Errorf("Skipped() = %+v", skipped)
	}
	if got := obs.named(facts.ActionSkipped); len(got) != 0 {
		t.Errorf("skipped facts = %+v", got)
	}
}

func canonical(t *testing.T, raw []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func TestPetstoreInvoke(t *testing.T) {
	leakcheck.Check(t)
	srv := newServer(t)
	tl := loadPetstore(t, srv)
	task, err := tl.NewTask(context.Background(), tool.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer task.Close(context.Background())

	tests := []struct {
		action string
		args   map[string]any
		method string
		path   string
		query  string
		body   string
		header map[string]string
	}{
		{action: "getPetById", args: map[string]any{"petId": 7}, method: "GET", path: "/v3/pet/7"},
		{action: "findPetsByStatus", args: map[string]any{"status": "sold"}, method: "GET", path: "/v3/pet/findByStatus",
			query: "status=sold"},
		// The document's default (available) is the server's: left out, it is not sent (SPEC §7.5).
		{action: "findPetsByStatus", args: map[string]any{}, method: "GET", path: "/v3/pet/findByStatus"},
		{action: "findPetsByTags", args: map[string]any{"tags": []any{"a b", "c&d"}}, method: "GET",
			path: "/v3/pet/findByTags", query: "tags=a+b&tags=c%26d"},
		{action: "updatePetWithForm", args: map[string]any{"petId": 1, "name": "x y", "status": "sold"}, method: "POST",
			path: "/v3/pet/1", query: "name=x+y&status=sold"},
		{action: "deletePet", args: map[string]any{"petId": 3, "api_key": "k1"}, method: "DELETE", path: "/v3/pet/3",
			header: map[string]string{"Api_key": "k1"}},
		{action: "addPet", args: map[string]any{"body": map[string]any{"name": "doggie", "photoUrls": []any{"u<1>"}}},
			method: "POST", path: "/v3/pet", body: `{"name":"doggie","photoUrls":["u<1>"]}`,
			header: map[string]string{"Content-Type": "application/json"}},
		{action: "getUserByName", args: map[string]any{"username": "a/b c"}, method: "GET", path: "/v3/user/a%2Fb%20c"},
		{action: "loginUser", args: map[string]any{"username": "u", "password": "p w"}, method: "GET",
			path: "/v3/user/login", query: "username=u&password=p+w"},
		{action: "getInventory", args: map[string]any{}, method: "GET", path: "/v3/store/inventory"},
	}
	for _, tt := range tests {
		t.Run(tt.action, func(t *testing.T) {
			res, err := task.Invoke(context.Background(), tt.action, tt.args)
			if err != nil {
				t.Fatalf("Invoke: %v", err)
			}
			if res.IsError {
				t.Fatalf("error result: %+v", res.Error)
			}
			if out, _ := res.Output.(map[string]any); out["ok"] != true {
				t.Errorf("output = %v", res.Output)
			}
			r := srv.last(t)
			if r.Method != tt.method || r.EscapedPath != tt.path || r.RawQuery != tt.query {
				t.Errorf("sent %s %s ? %s, want %s %s ? %s", r.Method, r.EscapedPath, r.RawQuery, tt.method, tt.path, tt.query)
			}
			if string(r.Body) != tt.body {
				t.Errorf("body = %q, want %q", r.Body, tt.body)
			}
			if got := r.Header.Get("Authorization"); got != "Bearer s3cret-token" {
				t.Errorf("Authorization = %q", got)
			}
			for k, v := range tt.header {
				if got := r.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

// TestPathInjection checks that no path parameter value leaves the operation's path (SPEC §4.4): every value is
// one escaped segment ("/" as %2F), and a value with a "." or ".." piece between its slashes is refused before
// anything is sent, since a server that decodes %2F before normalising would resolve it.
func TestPathInjection(t *testing.T) {
	leakcheck.Check(t)
	srv := newServer(t)
	tl := loadPetstore(t, srv)
	task, err := tl.NewTask(context.Background(), tool.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer task.Close(context.Background())

	tests := []struct {
		value string
		path  string // "" when the call must fail with invalid_arguments and send nothing
	}{
		{"..", ""},
		{".", ""},
		{"", ""},
		{"../admin", ""},
		{"../../../etc/passwd", ""},
		{"a/../../b", ""},
		{"a/./b", ""},
		{"./x", ""},
		{"x/..", ""},
		{"x/.", ""},
		{"...", "/v3/user/..."},
		{"a..b/.c", "/v3/user/a..b%2F.c"},
		{"a//b", "/v3/user/a%2F%2Fb"},
		{"/admin", "/v3/user/%2Fadmin"},
		{"%2e%2e", "/v3/user/%252e%252e"},
		{"x?admin=1#frag", "/v3/user/x%3Fadmin=1%23frag"},
		{"..;/x", "/v3/user/..%3B%2Fx"},
		{"\\..\\x", "/v3/user/%5C..%5Cx"},
		{"//evil.example/x", "/v3/user/%2F%2Fevil.example%2Fx"},
		{"http://evil.example/", "/v3/user/http:%2F%2Fevil.example%2F"},
		{"ü ñ", "/v3/user/%C3%BC%20%C3%B1"},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			before := srv.count()
			res, err := task.Invoke(context.Background(), "getUserByName", map[string]any{"username": tt.value})
			if err != nil {
				t.Fatalf("Invoke: %v", err)
			}
			if tt.path == "" {
				if !res.IsError || res.Error.Kind != runtime.KindInvalidArguments || srv.count() != before {
					t.Fatalf("want invalid_arguments and no request; got %+v, %d requests", res.Error, srv.count()-before)
				}
				return
			}
			if res.IsError {
				t.Fatalf("error result: %+v", res.Error)
			}
			r := srv.last(t)
			if r.EscapedPath != tt.path || r.RawQuery != "" {
				t.Errorf("path = %s ? %s, want %s", r.EscapedPath, r.RawQuery, tt.path)
			}
			if strings.Count(r.EscapedPath, "/") != 3 || !strings.HasPrefix(r.EscapedPath, "/v3/user/") {
				t.Errorf("path %s left the operation's path", r.EscapedPath)
			}
		})
	}
}

func TestHTTPErrorsAreRecoverable(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	tl := loadPetstore(t, srv)
	task, err := tl.NewTask(context.Background(), tool.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer task.Close(context.Background())
	res, err := task.Invoke(context.Background(), "getUserByName", map[string]any{"username": "missing"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || res.Error.Kind != runtime.KindInvalidRequest || res.ServerData["status"] != 404 {
		t.Errorf("result = %+v %v", res.Error, res.ServerData)
	}
	if strings.Contains(string(res.OutputJSON), "s3cret-token") {
		t.Error("the token leaked into the output")
	}
}

func TestMissingRequiredParameter(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	tl := loadPetstore(t, srv)
	task, err := tl.NewTask(context.Background(), tool.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer task.Close(context.Background())
	res, err := task.Invoke(context.Background(), "getPetById", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || res.Error.Kind != runtime.KindMissingFields || srv.count() != 0 {
		t.Errorf("result = %+v, requests = %d", res.Error, srv.count())
	}
}

func problems(t *testing.T, err error) []tool.Problem {
	t.Helper()
	var v *tool.ValidationError
	if !errors.As(err, &v) {
		t.Fatalf("error %v is not a *ValidationError", err)
	}
	return v.Problems
}

func hasProblem(ps []tool.Problem, path, typ, detail string) bool {
	for _, p := range ps {
		if p.Path == path && p.Type == typ && strings.Contains(p.Detail, detail) {
			return true
		}
	}
	return false
}

func TestLoadProblems(t *testing.T) {
	t.Parallel()
	petstore := testdata(t, "petstore3.json")
	tests := []struct {
		name, manifest string
		path, typ      string
		detail         string
	}{
		{"missing document", `
openapi:
  url: ` + filepath.Join(t.TempDir(), "none.json") + `
  base_url: http://api.example`, "openapi.url", "invalid", "cannot load the OpenAPI document"},
		{"relative servers need base_url", `
openapi:
  url: ` + petstore, "openapi.base_url", "required", "set base_url"},
		{"declared action named like an operation", `
openapi:
  url: ` + petstore + `
  base_url: http://api.example
actions:
  - name: getPetById
    description: Shadows the operation.
    execute:
      cel: {expression: "1"}`, "openapi", "duplicate", `"getPetById"`},
		{"unknown operation_id", `
openapi:
  url: ` + petstore + `
  base_url: http://api.example
actions:
  - name: pet
    description: A pet.
    parameters:
      properties:
        petId: {type: integer}
    execute:
      openapi: {operation_id: nosuch}`, "actions[0].execute.openapi.operation_id", "invalid", "no operation"},
		{"operation parameter not declared", `
openapi:
  url: ` + petstore + `
  base_url: http://api.example
actions:
  - name: pet
    description: A pet.
    parameters:
      properties:
        id: {type: integer}
    execute:
      openapi: {operation_id: getPetById}`, "actions[0].execute.openapi", "required", `"petId"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: t\ndescription: Test.\n" +
				strings.TrimPrefix(tt.manifest, "\n") + "\n"
			_, err := tool.Load(context.Background(), []byte(src))
			ps := problems(t, err)
			if !hasProblem(ps, tt.path, tt.typ, tt.detail) {
				t.Errorf("problems = %+v, want %s %s %q", ps, tt.path, tt.typ, tt.detail)
			}
		})
	}
}

// TestBoundAction binds declared actions to one operation with operation_id: one declares its parameters, the
// other takes the operation's. The declared actions are the whole surface: the top-level block does not expand.
func TestBoundAction(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	manifest := `kind: commonagents.info/v1beta2/tool
namespace: tests
name: pets
description: Pets.
openapi:
  url: ` + testdata(t, "petstore3.json") + `
  base_url: ` + srv.URL + `/v3
actions:
  - name: get_pet
    description: Reads a pet.
    parameters:
      properties:
        petId: {type: integer, description: The pet.}
    execute:
      openapi: {operation_id: getPetById}
  - name: find_pets
    description: Finds pets by status.
    execute:
      openapi: {operation_id: findPetsByStatus}
`
	tl, err := tool.Load(context.Background(), []byte(manifest), tool.WithHTTPClient(srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	fns := tl.Functions(tool.Capability{})
	var actions []string
	for _, f := range fns {
		actions = append(actions, f.Action)
	}
	if !reflect.DeepEqual(actions, []string{"get_pet", "find_pets"}) {
		t.Fatalf("functions for %v; want get_pet, find_pets only", actions)
	}
	if s := tl.Skipped(); len(s) != 0 {
		t.Errorf("Skipped() = %+v, want nothing: the block did not expand", s)
	}
	if got := canonical(t, fns[0].Parameters); got != `{"additionalProperties":false,"properties":{"petId":{"description":"The pet.","type":"integer"}},"required":["petId"],"type":"object"}` {
		t.Errorf("get_pet schema = %s", got)
	}
	if !strings.Contains(string(fns[1].Parameters), `"enum":["available","pending","sold"]`) {
		t.Errorf("find_pets did not take the operation's parameters: %s", fns[1].Parameters)
	}
	task, err := tl.NewTask(context.Background(), tool.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer task.Close(context.Background())
	calls := []struct {
		action string
		args   map[string]any
		want   string
	}{
		{"get_pet", map[string]any{"petId": 42}, "GET /v3/pet/42?"},
		{"find_pets", map[string]any{"status": "pending"}, "GET /v3/pet/findByStatus?status=pending"},
	}
	for _, c := range calls {
		res, err := task.Invoke(context.Background(), c.action, c.args)
		if err != nil || res.IsError {
			t.Fatalf("Invoke %s: %v %+v", c.action, err, res)
		}
		if r := srv.last(t); r.Method+" "+r.EscapedPath+"?"+r.RawQuery != c.want {
			t.Errorf("%s sent %s %s?%s, want %s", c.action, r.Method, r.EscapedPath, r.RawQuery, c.want)
		}
	}
}

// TestRemoteDocument fetches the document over HTTP once per process, resolves its relative servers against
// the document's URL and invokes an operation there.
func TestRemoteDocument(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(testdata(t, "petstore3.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc = bytes.Replace(doc, []byte(`"url": "/api/v3"`), []byte(`"url": "/v3"`), 1)
	var fetches atomic.Int32
	api := newServer(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		fetches.Add(1)
		_, _ = w.Write(doc)
	})
	mux.Handle("/", api.Config.Handler)
	site := httptest.NewServer(mux)
	defer site.Close()
	manifest := `kind: commonagents.info/v1beta2/tool
namespace: tests
name: remote
description: Remote.
openapi:
  url: ` + site.URL + `/openapi.json
`
	for range 2 {
		tl, err := tool.Load(context.Background(), []byte(manifest), tool.WithHTTPClient(site.Client()))
		if err != nil {
			t.Fatal(err)
		}
		task, err := tl.NewTask(context.Background(), tool.TaskConfig{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := task.Invoke(context.Background(), "getOrderById", map[string]any{"orderId": 5})
		task.Close(context.Background())
		if err != nil || res.IsError {
			t.Fatalf("Invoke: %v %+v", err, res)
		}
		if r := api.last(t); r.EscapedPath != "/v3/store/order/5" {
			t.Errorf("sent %s", r.EscapedPath)
		}
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("the document was fetched %d times, want once", n)
	}
}

func loadDocument(t testing.TB, name string, opts ...tool.Option) *tool.Tool {
	t.Helper()
	m := "kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: api\ndescription: An API.\nopenapi:\n  url: " +
		testdata(t, name) + "\n  base_url: http://api.example\n"
	tl, err := tool.Load(context.Background(), []byte(m), opts...)
	if err != nil {
		t.Fatalf("Load %s: %v", name, err)
	}
	return tl
}

// TestOpenAPI31 loads real OpenAPI 3.1 documents: SendGrid's v3 API (1,093 $refs, nullable properties, 334
// operations) and a sample with type lists and recursive $refs but no operationIds.
func TestOpenAPI31(t *testing.T) {
	t.Parallel()
	tl := loadDocument(t, "sendgrid-v3.json")
	fns := tl.Functions(tool.Capability{})
	skipped := tl.Skipped()
	if len(fns)+len(skipped) != 334 || len(fns) < 300 {
		t.Errorf("%d functions and %d skipped, want 334 operations, most of them functions", len(fns), len(skipped))
	}
	for _, s := range skipped {
		if s.Kind != "openapi" || s.Name == "" || !strings.Contains(s.Reason, "both become the action parameter") {
			t.Errorf("unexpected skip %+v", s)
		}
	}
	f, ok := functionByAction(fns, "POST_alerts")
	if !ok {
		t.Fatal("no POST_alerts")
	}
	var s struct {
		Properties struct {
			Body struct {
				Properties map[string]struct {
					Type any `json:"type"`
				} `json:"properties"`
			} `json:"body"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(f.Parameters, &s); err != nil {
		t.Fatal(err)
	}
	if got := s.Properties.Body.Properties["email_to"].Type; !reflect.DeepEqual(got, []any{"string", "null"}) {
		t.Errorf("nullable email_to has type %v, want [string null]", got)
	}
	if strings.Contains(string(f.Parameters), "$ref") || strings.Contains(string(f.Parameters), "nullable") {
		t.Errorf("schema still has $ref or nullable: %s", f.Parameters)
	}

	// Operations without an operationId are named from their method and path.
	sample := loadDocument(t, "swaggest-sample-3.1.json")
	var actions []string
	for _, f := range sample.Functions(tool.Capability{}) {
		actions = append(actions, f.Action)
	}
	if want := []string{"get_somewhere_in_path", "post_somewhere_in_path"}; !reflect.DeepEqual(actions, want) {
		t.Errorf("actions %v, want %v", actions, want)
	}
	if got := sample.Skipped(); len(got) != 0 {
		t.Errorf("Skipped() = %+v", got)
	}
}

// TestLLMSchemas checks every function of the large document against the rules LLM providers apply to tool
// definitions (SPEC §3.5).
func TestLLMSchemas(t *testing.T) {
	t.Parallel()
	tl := loadDocument(t, "sendgrid-v3.json")
	for _, f := range tl.Functions(tool.Capability{Key: "sendgrid"}) {
		var s map[string]any
		if err := json.Unmarshal(f.Parameters, &s); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if s["type"] != "object" || s["additionalProperties"] != false {
			t.Errorf("%s: not a closed object schema", f.Name)
		}
		props, _ := s["properties"].(map[string]any)
		for name := range props {
			if !propertyName.MatchString(name) {
				t.Errorf("%s: property %q is not accepted by LLM providers", f.Name, name)
			}
		}
		if len(f.Description) == 0 || len([]rune(f.Description)) > 1024 {
			t.Errorf("%s: description of %d characters", f.Name, len([]rune(f.Description)))
		}
		if !functionName.MatchString(f.Name) {
			t.Errorf("function name %q", f.Name)
		}
	}
}

var (
	propertyName = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,64}$`)
	functionName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)
)

func TestHeaderInjection(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	tl := loadPetstore(t, srv)
	task, err := tl.NewTask(context.Background(), tool.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer task.Close(context.Background())
	for _, v := range []string{"k\r\nX-Injected: 1", "k\nX: y", "k\x00"} {
		res, err := task.Invoke(context.Background(), "deletePet", map[string]any{"petId": 1, "api_key": v})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError || res.Error.Kind != runtime.KindInvalidArguments {
			t.Errorf("%q: result %+v", v, res.Error)
		}
	}
	if n := srv.count(); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

// TestLoadBoundedByContext: a document server that does not answer cannot hold Load past its context.
func TestLoadBoundedByContext(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer stuck.Close()
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	m := "kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: api\ndescription: An API.\nopenapi:\n  url: " +
		stuck.URL + "/openapi.json\n"
	_, err := tool.Load(ctx, []byte(m))
	if ps := problems(t, err); !hasProblem(ps, "openapi.url", "invalid", "cannot load the OpenAPI document") {
		t.Errorf("problems = %+v", ps)
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
	if n := len(cel.Functions(tool.Capability{})); n != 20 {
		t.Errorf("%d functions, want hello and 19 operations", n)
	}
}
