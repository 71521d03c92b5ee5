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
	"github.com/getkin/kin-openapi/openapi3"
)

// openAPIExclusion says why a group's schema cannot go through an OpenAPI 3.1 document, or "". These are the
// exclusions issue 29 allows: a schema that needs a fetch (SPEC §3.1), and what kin-openapi v0.152 cannot carry:
// a $ref to a plain-name anchor ("#foo"), a $ref to a boolean schema, and `const: null`.
func openAPIExclusion(t testing.TB, raw json.RawMessage) string {
	if needsFetch(t, raw) {
		return "needs a fetch"
	}
	var s any
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	reason := ""
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				switch {
				case k == "$ref":
					if ref, ok := e.(string); ok && strings.HasPrefix(ref, "#") && ref != "#" && !strings.HasPrefix(ref, "#/") {
						reason = "a $ref to a plain-name anchor (kin-openapi)"
					} else if ok && isBoolTarget(s, ref) {
						reason = "a $ref to a boolean schema (kin-openapi)"
					}
				case k == "const" && e == nil:
					reason = "const: null (kin-openapi cannot tell it from absent)"
				case k == "enum" || k == "const" || k == "default" || k == "examples":
					continue
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(s)
	return reason
}

// isBoolTarget reports whether the local pointer ref resolves to a boolean in root.
func isBoolTarget(root any, ref string) bool {
	ptr, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return false
	}
	cur := root
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		if tok == "" {
			continue
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		cur = m[strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")]
	}
	_, isBool := cur.(bool)
	return isBool
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
	for _, d := range suiteDialects {
		t.Run(strings.TrimSuffix(strings.TrimPrefix(d.file, "json-schema-"), ".json.gz"), func(t *testing.T) {
			t.Parallel()
			runSuiteOpenAPI31(t, d.file, d.uri)
		})
	}
}

// runSuiteOpenAPI31 runs one suite file through a document whose jsonSchemaDialect is uri ("" leaves it out).
func runSuiteOpenAPI31(t *testing.T, file, uri string) {
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
	kinRefused := map[string]string{}
	components := map[string]any{}
	paths := map[string]any{}
	for _, f := range slices.Sorted(mapKeys(files)) {
		for _, g := range files[f] {
			name := fmt.Sprintf("g%03d", len(groups))
			gr := group{name: f + " / " + g.Description, op: name + "_body", g: g, excluded: openAPIExclusion(t, g.Schema)}
			groups = append(groups, gr)
			if gr.excluded != "" {
				continue
			}
			s := decodeNumbers(t, g.Schema)
			var body any = map[string]any{"$ref": "#/components/schemas/" + name}
			if _, isBool := s.(bool); isBool {
				body = s // a $ref to a boolean schema is lost by kin-openapi; inline, the schema is carried
			}
			op := map[string]any{"post": map[string]any{"operationId": gr.op,
				"requestBody": map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{
					"schema": body}}},
				"responses": map[string]any{"200": map[string]any{"description": "ok"}}}}
			var remote bool // a remote $ref was excluded above
			comp := rewriteRefs(s, "#/components/schemas/"+name, &remote)
			// kin-openapi resolves $refs without regard to $id: a reference to an embedded resource is a fetch to
			// it. Such a group would fail the whole document, so it gets no operation: its cases count as wrong.
			one := suiteDocument(t, srv.URL, uri, map[string]any{"/" + name: op}, map[string]any{name: comp})
			if _, err := openapi3.NewLoader().LoadFromData(one); err != nil {
				kinRefused[gr.op] = err.Error()
				continue
			}
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
	excluded, known := map[string]int{}, map[string]int{}
	for _, g := range groups {
		if g.excluded != "" {
			excluded[g.excluded] += len(g.g.Tests)
			continue
		}
		reason, refused := skipped[g.op]
		if kr, ok := kinRefused[g.op]; ok {
			reason, refused = "kin-openapi cannot load it: "+kr, true
		}
		if refused && kinRefused[g.op] == "" {
			t.Errorf("%s: skipped: %s", g.name, reason)
		}
		for _, c := range g.g.Tests {
			total++
			name := g.name + " / " + c.Description
			accepted := false
			if !refused {
				before := reached
				res := suiteInvoke(t, task, name, g.op, "body", c.Data)
				if accepted = !res.IsError; accepted && reached != before+1 {
					t.Errorf("%s: accepted, but the server got no request", name)
				}
			}
			if accepted == c.Valid {
				right++
				continue
			}
			why := openAPILimitation(g.g.Schema, kinRefused[g.op] != "")
			if why == "" {
				t.Errorf("%s: valid = %v, accepted = %v", name, c.Valid, accepted)
				why = "unexplained"
			}
			known[why]++
			if c.Valid {
				validRejected++
			}
		}
	}
	rate := float64(right) / float64(total)
	t.Logf("%s through an OpenAPI 3.1 request body: %d of %d right (%.2f %%), %d valid rejected; wrong by "+
		"reason: %v; left out: %v", file, right, total, 100*rate, validRejected, known, excluded)
	// Issue 29's goal is 99.5 % with no valid argument rejected; while kin-openapi reads the document
	// (docs/schemas.md, "Not yet"), this pins what the path reaches so it cannot regress.
	floor := map[string]float64{"json-schema-draft2020-12.json.gz": 0.96, "json-schema-draft2019-09.json.gz": 0.92}[file]
	if rate < floor {
		t.Errorf("pass rate %.2f %% below the %.0f %% this path reached", 100*rate, 100*floor)
	}
}

// openAPILimitation names the known reason a case through kin-openapi's resolved tree comes out wrong, or "".
func openAPILimitation(schema json.RawMessage, kinRefused bool) string {
	switch s := string(schema); {
	case kinRefused:
		return "kin-openapi cannot load it (a $ref into $defs or to an embedded resource by its $id; 2019-09 items: [...])"
	case strings.Contains(s, `"$dynamicRef"`):
		return "$dynamicRef is lost when kin-openapi inlines references"
	case strings.Contains(s, `"$recursiveRef"`):
		return "kin-openapi does not read $recursiveRef (2019-09)"
	case strings.Contains(s, `"$id"`) || strings.Contains(s, `"$anchor"`):
		return "kin-openapi resolves references without $id and $anchor"
	}
	return ""
}
