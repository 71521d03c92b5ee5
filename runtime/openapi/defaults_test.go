package openapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	tool "github.com/commonagents-go/tool"
)

// defaultsDoc gives a default to an optional parameter in every location and to a body property.
const defaultsDoc = `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{
"/items/{id}":{"post":{"operationId":"put","parameters":[
 {"name":"id","in":"path","required":true,"schema":{"type":"string"}},
 {"name":"sort","in":"query","schema":{"type":"string","default":"created"}},
 {"name":"page","in":"query","schema":{"type":"integer","default":1}},
 {"name":"X-Mode","in":"header","schema":{"type":"string","default":"fast"}},
 {"name":"lang","in":"cookie","schema":{"type":"string","default":"en"}}],
 "requestBody":{"content":{"application/json":{"schema":{"type":"object","properties":{
  "name":{"type":"string"},"color":{"type":"string","default":"red"}}}}}},
 "responses":{"200":{"description":"ok"}}}}}}`

// TestServerDefaultsNotSent pins SPEC §7.5: an OpenAPI default is the server's, so an optional parameter or body
// property the LLM left out is not sent, while the default stays in the schema the LLM sees; a parameter the
// manifest declares keeps SPEC §3.1, its default filled in.
func TestServerDefaultsNotSent(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	rest := `actions:
  - name: bound
    description: The operation with the operation's own parameters.
    execute: {openapi: {operation_id: put}}
  - name: declared
    description: The operation with parameters the manifest declares.
    parameters:
      properties:
        id: {type: string}
        page: {type: integer, default: 7}
    execute: {openapi: {operation_id: put}}
`
	expanded := loadDoc(t, srv, defaultsDoc, "", "")
	declared := loadDoc(t, srv, defaultsDoc, "", rest)
	for _, c := range []struct {
		tl                 *tool.Tool
		action             string
		args               map[string]any
		query, body        string
		header, cookie     string
		wantDefaultInShown bool
	}{
		{tl: expanded, action: "put", args: map[string]any{"id": "a", "body": map[string]any{"name": "n"}},
			body: `{"name":"n"}`, wantDefaultInShown: true},
		{tl: expanded, action: "put", args: map[string]any{"id": "a", "sort": "name", "page": 2, "X-Mode": "slow",
			"lang": "de", "body": map[string]any{"color": "blue"}},
			query: "sort=name&page=2", header: "slow", cookie: "lang=de", body: `{"color":"blue"}`},
		{tl: declared, action: "bound", args: map[string]any{"id": "a"}, wantDefaultInShown: true},
		{tl: declared, action: "declared", args: map[string]any{"id": "a"}, query: "page=7"},
	} {
		res := invokeOnce(t, c.tl, c.action, c.args)
		if res.IsError {
			t.Fatalf("%s %v: %+v", c.action, c.args, res.Error)
		}
		r := srv.last(t)
		if r.RawQuery != c.query || string(r.Body) != c.body || r.Header.Get("X-Mode") != c.header ||
			r.Header.Get("Cookie") != c.cookie {
			t.Errorf("%s %v: query %q body %q X-Mode %q Cookie %q, want %q %q %q %q", c.action, c.args, r.RawQuery,
				r.Body, r.Header.Get("X-Mode"), r.Header.Get("Cookie"), c.query, c.body, c.header, c.cookie)
		}
		if !c.wantDefaultInShown {
			continue
		}
		for _, f := range c.tl.Functions(tool.Capability{}) {
			if !strings.HasSuffix(f.Name, c.action) {
				continue
			}
			var s struct {
				Properties map[string]struct {
					Default any `json:"default"`
				} `json:"properties"`
			}
			if err := json.Unmarshal(f.Parameters, &s); err != nil {
				t.Fatal(err)
			}
			if s.Properties["sort"].Default != "created" || s.Properties["lang"].Default != "en" {
				t.Errorf("%s: the LLM does not see the defaults: %s", f.Name, f.Parameters)
			}
		}
	}
}
