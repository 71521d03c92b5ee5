package tool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	tool "github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/runtime"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// suiteDialects are the JSON-Schema-Test-Suite directories run through the MCP path, with the `$schema` the tool
// wrapper names ("" leaves the dialect to MCP's default, 2020-12).
var suiteDialects = []struct{ file, uri string }{
	{"json-schema-draft2020-12.json.gz", ""},
	{"json-schema-draft2019-09.json.gz", "https://json-schema.org/draft/2019-09/schema"},
}

// shortSuiteDialects are the dialects a -short run takes through the MCP and OpenAPI paths: 2020-12, the dialect
// both default to; the full run (the test command) takes 2019-09 too.
func shortSuiteDialects() []struct{ file, uri string } {
	if testing.Short() {
		return suiteDialects[:1]
	}
	return suiteDialects
}

// caseBase is the `$id` a suite schema without one gets, so its "#..." pointers resolve inside it.
const caseBase = "https://json-schema-test-suite.invalid/case.json"

// suiteToolSchema is the inputSchema of the tool of one group: an object whose required property x is the group's
// schema, referenced as an embedded resource ($defs.case with its own `$id`) so its references resolve as they
// do at the root of a document.
func suiteToolSchema(t testing.TB, raw json.RawMessage, uri string) json.RawMessage {
	s := decodeNumbers(t, raw)
	if m, ok := s.(map[string]any); ok {
		if _, has := m["$id"]; !has {
			m["$id"] = caseBase
		}
	}
	w := map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"$ref": "#/$defs/case"}},
		"required": []any{"x"}, "$defs": map[string]any{"case": s}}
	if uri != "" {
		w["$schema"] = uri
	}
	out, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// decodeNumbers decodes raw JSON with its numbers as json.Number, exact as written.
func decodeNumbers(t testing.TB, raw json.RawMessage) any {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// suiteInvoke invokes action with the suite case data as its argument param; the result must be a run or an
// invalid_arguments refusal.
func suiteInvoke(t *testing.T, task *tool.Task, name, action, param string, data json.RawMessage) *tool.Result {
	res, err := task.Invoke(context.Background(), action, map[string]any{param: decodeNumbers(t, data)})
	if err != nil {
		t.Fatalf("%s: Invoke: %v", name, err)
	}
	if res.IsError && res.Error.Kind != runtime.KindInvalidArguments {
		t.Errorf("%s: %v, want a run or invalid_arguments", name, res.Error)
	}
	return res
}

// needsFetch reports whether compiling schema would load a URL: a remote `$ref` or a meta-schema that is not one
// of the dialects'. SPEC §3.1 refuses those, so such groups are left out of the rate (and must be skipped).
func needsFetch(t testing.TB, schema json.RawMessage) bool {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	var fetched recordingLoader
	c.UseLoader(&fetched)
	if err := c.AddResource("urn:suite:tool", doc); err != nil {
		t.Fatal(err)
	}
	_, _ = c.Compile("urn:suite:tool")
	return len(fetched) > 0
}

type recordingLoader []string

func (l *recordingLoader) Load(url string) (any, error) {
	*l = append(*l, url)
	return nil, fmt.Errorf("not fetched: %s", url)
}

// suiteServer is an in-process MCP server (mcp-go's, over streamable HTTP) with one tool per group; each tool
// answers "ran".
func suiteServer(t *testing.T, schemas map[string]json.RawMessage) string {
	return schemaServer(t, schemas, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ran"), nil
	})
}

// schemaServer is an in-process MCP server (mcp-go's, over streamable HTTP) with a tool of each input schema, all
// answered by h. It returns the server's URL.
func schemaServer(t *testing.T, schemas map[string]json.RawMessage, h server.ToolHandlerFunc) string {
	s := server.NewMCPServer("schemas", "1.0.0", server.WithToolCapabilities(false))
	for _, name := range slices.Sorted(mapKeys(schemas)) {
		s.AddTool(mcp.NewToolWithRawSchema(name, "Checks its arguments.", schemas[name]), h)
	}
	hs := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// TestJSONSchemaTestSuiteMCP runs the required draft2020-12 and draft2019-09 files of the JSON-Schema-Test-Suite
// through an MCP server (issue 29): each group is a tool whose inputSchema holds the group's schema as property x,
// Load discovers the tools, and each case's data is the argument {"x": data} of an Invoke. A valid case must reach
// the server, an invalid one must be refused as invalid_arguments. Groups whose schema would need a fetch are
// counted apart and must be skipped by Load.
func TestJSONSchemaTestSuiteMCP(t *testing.T) {
	t.Parallel()
	for _, dialect := range shortSuiteDialects() {
		t.Run(strings.TrimSuffix(strings.TrimPrefix(dialect.file, "json-schema-"), ".json.gz"), func(t *testing.T) {
			t.Parallel()
			runSuiteMCP(t, dialect.file, dialect.uri)
		})
	}
}

func runSuiteMCP(t *testing.T, file, uri string) {
	var files map[string][]schemaGroup
	readGzipJSON(t, file, &files)
	type group struct {
		name  string // "file / group"
		tool  string
		g     schemaGroup
		fetch bool
	}
	var groups []group
	schemas := map[string]json.RawMessage{}
	for _, f := range slices.Sorted(mapKeys(files)) {
		for _, g := range files[f] {
			name := fmt.Sprintf("g%03d", len(groups))
			s := suiteToolSchema(t, g.Schema, uri)
			schemas[name] = s
			groups = append(groups, group{name: f + " / " + g.Description, tool: name, g: g, fetch: needsFetch(t, s)})
		}
	}
	src := fmt.Sprintf("kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: schema-suite\n"+
		"description: The JSON-Schema-Test-Suite.\nmcp:\n  transport: streamable_http\n  url: %s\nactions: []\n",
		suiteServer(t, schemas))
	tl, err := tool.Load(context.Background(), []byte(src), tool.WithDiscovery(true))
	if err != nil {
		t.Fatal(err)
	}
	skipped := map[string]string{}
	for _, s := range tl.Skipped() {
		skipped[s.Name] = s.Reason
	}
	task := newTask(t, tl, tool.TaskConfig{})
	var right, total, fetchCases int
	var wrong, validRejected []string
	for _, g := range groups {
		if g.fetch {
			fetchCases += len(g.g.Tests)
			if _, ok := skipped[g.tool]; !ok {
				t.Errorf("%s: a schema that needs a fetch was not skipped", g.name)
			}
			continue
		}
		if reason, ok := skipped[g.tool]; ok {
			t.Errorf("%s: skipped: %s", g.name, reason)
		}
		for _, c := range g.g.Tests {
			total++
			name := g.name + " / " + c.Description
			accepted := false
			if _, refused := skipped[g.tool]; !refused {
				res := suiteInvoke(t, task, name, g.tool, "x", c.Data)
				if accepted = !res.IsError; accepted && res.Text() != "ran" {
					t.Errorf("%s: result %q, want the server's", name, res.Text())
				}
			}
			if accepted == c.Valid {
				right++
				continue
			}
			wrong = append(wrong, fmt.Sprintf("%s (valid %v)", name, c.Valid))
			if c.Valid {
				validRejected = append(validRejected, name)
			}
		}
	}
	rate := float64(right) / float64(total)
	t.Logf("%s through MCP: %d of %d right (%.2f %%); %d cases left out (the schema needs a fetch)",
		file, right, total, 100*rate, fetchCases)
	if len(validRejected) > 0 {
		t.Errorf("%d valid arguments rejected: %s", len(validRejected), strings.Join(validRejected, "; "))
	}
	if rate < 0.995 {
		t.Errorf("pass rate %.2f %% below 99.5 %%; wrong:\n%s", 100*rate, strings.Join(wrong, "\n"))
	}
}
