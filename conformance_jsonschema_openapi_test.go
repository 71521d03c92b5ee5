package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	tool "github.com/commonagents-go/tool"
)

// openAPIExclusion says why a group's schema cannot go through an OpenAPI 3.1 document, or "": the only
// exclusion issue 29 allows once arguments are validated against the document as written is a schema that needs a
// fetch (SPEC §3.1). kin-openapi's limits (a $ref to a plain-name anchor or to a boolean schema, `const: null`)
// only reach the copy shown to the LLM.
func openAPIExclusion(t testing.TB, raw json.RawMessage) string {
	if needsFetch(t, raw) {
		return "needs a fetch"
	}
	return ""
}

// suiteDocument is an OpenAPI 3.1 document with paths and component schemas, served at url, in the JSON Schema
// dialect uri ("": the default, 2020-12).
func suiteDocument(t testing.TB, url, uri string, paths, schemas map[string]any) []byte {
	d := map[string]any{"openapi": "3.1.0", "info": map[string]any{"title": "suite", "version": "1"},
		"servers": []any{map[string]any{"url": url}}, "paths": paths, "components": map[string]any{"schemas": schemas}}
	if uri != "" {
		d["jsonSchemaDialect"] = uri
	}
	doc, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestJSONSchemaTestSuiteOpenAPI31 runs the required draft2020-12 and draft2019-09 files of the
// JSON-Schema-Test-Suite through an OpenAPI 3.1 document (issue 29; for 2019-09 its jsonSchemaDialect says so):
// each group's schema is a component, the JSON request body of one operation; each case's data is the argument
// {"body": data} of an Invoke against an httptest server. A valid case must reach the server, an invalid one must
// be refused as invalid_arguments. The exclusions are openAPIExclusion's; every wrong case must have a known
// reason (openAPILimitation).
func TestJSONSchemaTestSuiteOpenAPI31(t *testing.T) {
	t.Parallel()
	for _, d := range shortSuiteDialects() {
		for _, where := range []string{"body", "query"} {
			t.Run(strings.TrimSuffix(strings.TrimPrefix(d.file, "json-schema-"), ".json.gz")+"/"+where, func(t *testing.T) {
				t.Parallel()
				runSuiteOpenAPI31(t, d.file, d.uri, where)
			})
		}
	}
}

// suiteOperation is the operation of one group: its schema (a $ref to the component, or the schema itself) is the
// JSON request body ("body"), or a required query parameter "x" described by JSON content ("query": its value
// sent as JSON text).
func suiteOperation(id, where string, schema any) map[string]any {
	media := map[string]any{"application/json": map[string]any{"schema": schema}}
	op := map[string]any{"operationId": id, "responses": map[string]any{"200": map[string]any{"description": "ok"}}}
	if where == "body" {
		op["requestBody"] = map[string]any{"required": true, "content": media}
		return map[string]any{"post": op}
	}
	op["parameters"] = []any{map[string]any{"name": "x", "in": "query", "required": true, "content": media}}
	return map[string]any{"get": op}
}

// runSuiteOpenAPI31 runs one suite file through a document whose jsonSchemaDialect is uri ("" leaves it out), each
// case's data the request body or a query parameter (where: suiteOperation).
func runSuiteOpenAPI31(t *testing.T, file, uri, where string) {
	param := map[string]string{"body": "body", "query": "x"}[where]
	var files map[string][]schemaGroup
	readGzipJSON(t, file, &files)
	var reached int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		reached++
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(srv.Close)
	type group struct {
		name, op, excluded string
		g                  schemaGroup
	}
	var groups []group
	components := map[string]any{}
	paths := map[string]any{}
	for _, f := range slices.Sorted(mapKeys(files)) {
		for _, g := range files[f] {
			name := fmt.Sprintf("g%03d", len(groups))
			gr := group{name: f + " / " + g.Description, op: name + "_" + where, g: g, excluded: openAPIExclusion(t, g.Schema)}
			groups = append(groups, gr)
			if gr.excluded != "" {
				continue
			}
			s := decodeNumbers(t, g.Schema)
			var body any = map[string]any{"$ref": "#/components/schemas/" + name}
			if _, isBool := s.(bool); isBool {
				body = s // a $ref to a boolean schema is lost by kin-openapi; inline, the schema is carried
			}
			op := suiteOperation(gr.op, where, body)
			var remote bool // a remote $ref was excluded above
			comp := suiteComponent(s, name, &remote)
			// kin-openapi resolves $refs without regard to $id, $anchor or $defs: such a document is read by
			// kin-openapi without them, and arguments are validated against the document as written.
			components[name] = comp
			paths["/"+name] = op
		}
	}
	doc := suiteDocument(t, srv.URL, uri, paths, components)
	docFile := filepath.Join(t.TempDir(), "suite.json")
	if err := os.WriteFile(docFile, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	src := "kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: schema-suite\n" +
		"description: The JSON-Schema-Test-Suite.\nopenapi:\n  url: " + docFile + "\nactions: []\n"
	tl, err := tool.Load(context.Background(), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	skipped := map[string]string{}
	for _, s := range tl.Skipped() {
		skipped[s.Name] = s.Reason
	}
	task := newTask(t, tl, tool.TaskConfig{})
	var right, total, validRejected int
	excluded := map[string]int{}
	for _, g := range groups {
		if g.excluded != "" {
			excluded[g.excluded] += len(g.g.Tests)
			continue
		}
		reason, refused := skipped[g.op]
		if refused {
			t.Errorf("%s: skipped: %s", g.name, reason)
		}
		for _, c := range g.g.Tests {
			total++
			name := g.name + " / " + c.Description
			accepted := false
			if !refused {
				before := reached
				res := suiteInvoke(t, task, name, g.op, param, c.Data)
				if accepted = !res.IsError; accepted && reached != before+1 {
					t.Errorf("%s: accepted, but the server got no request", name)
				}
			}
			if accepted == c.Valid {
				right++
				continue
			}
			t.Errorf("%s: valid = %v, accepted = %v", name, c.Valid, accepted)
			if c.Valid {
				validRejected++
			}
		}
	}
	rate := float64(right) / float64(total)
	t.Logf("%s through an OpenAPI 3.1 %s: %d of %d right (%.2f %%), %d valid rejected; left out: %v",
		file, where, right, total, 100*rate, validRejected, excluded)
	// Issue 29's goal: 99.5 %, no valid argument rejected (every wrong case is reported above).
	if rate < 0.995 || validRejected > 0 {
		t.Errorf("pass rate %.2f %%, %d valid rejected: want ≥ 99.5 %% and none", 100*rate, validRejected)
	}
}

// suiteComponent is a group's schema as the component name: its "#/..." $refs point into the component
// ("#/components/schemas/name/..."), as OpenAPI 3.1 documents write them. A schema whose references depend on its
// resource ($id, $anchor, $recursiveRef, $dynamicRef: "#" is the resource's root, not the document's) becomes a
// resource of its own instead, with the $id caseBase gives it when it has none, its references as written.
func suiteComponent(s any, name string, remote *bool) any {
	raw, _ := json.Marshal(s)
	text := string(raw)
	if !strings.Contains(text, `"$id"`) && !strings.Contains(text, `"$anchor"`) &&
		!strings.Contains(text, `"$recursive`) && !strings.Contains(text, `"$dynamic`) {
		return rewriteRefs(s, "#/components/schemas/"+name, remote)
	}
	m, ok := s.(map[string]any)
	if !ok {
		return s
	}
	if _, has := m["$id"]; !has {
		out := make(map[string]any, len(m)+1)
		for k, v := range m {
			out[k] = v
		}
		out["$id"] = strings.TrimSuffix(caseBase, ".json") + "-" + name + ".json"
		return out
	}
	return m
}
