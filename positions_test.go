package tool_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/commonagents-go/tool"
)

// problemAt finds the problem at path, failing the test when there is none.
func problemAt(t *testing.T, verr *tool.ValidationError, path string) tool.Problem {
	t.Helper()
	for _, p := range verr.Problems {
		if p.Path == path {
			return p
		}
	}
	t.Fatalf("no problem at %s in:\n%v", path, verr)
	return tool.Problem{}
}

func TestProblemPositions(t *testing.T) {
	t.Parallel()
	yamlSrc := `kind: commonagents.info/v1beta2/tool
namespace: tests
name: pos
description: A test tool.
colour: red
actions:
  - name: fetch
    description: Fetches.
    execute:
      stateless_http:
        method: FETCH
        url: "https://example.com/{parameters.missing}"
        timeout: "soon"
`
	jsonSrc := `{
  "kind": "commonagents.info/v1beta2/tool",
  "namespace": "tests",
  "name": "pos",
  "description": "A test tool.",
  "actions": [
    {
      "name": "calc",
      "description": "Calculates.",
      "execute": {
        "cel": {"expression": "1 +", "extra": true}
      }
    }
  ]
}`
	dottedSrc := `kind: commonagents.info/v1beta2/tool
namespace: tests
name: pos
description: A test tool.
settings:
  properties:
    github.token: { type: strin }
actions:
  - name: fetch
    description: Fetches.
    execute:
      stateless_http:
        method: GET
        url: "https://example.com/"
        headers: { X.Trace: "{paramters.x}" }
`
	type want struct {
		path, typ    string
		line, column int
	}
	tests := []struct {
		name     string
		manifest string
		want     []want
	}{
		{"yaml", yamlSrc, []want{
			{"colour", "unsupported", 5, 1},
			{"actions[0].execute.stateless_http.method", "unsupported", 11, 9},
			{"actions[0].execute.stateless_http.url", "invalid", 12, 9},
			{"actions[0].execute.stateless_http.timeout", "invalid", 13, 9},
		}},
		{"json", jsonSrc, []want{
			{"actions[0].execute.cel.expression", "invalid", 11, 17},
			{"actions[0].execute.cel.extra", "unsupported", 11, 38},
		}},
		{"keys with dots, flow style", dottedSrc, []want{
			{`settings.properties["github.token"].type`, "invalid", 7, 21},
			{`actions[0].execute.stateless_http.headers["X.Trace"]`, "invalid", 15, 20},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			verr := mustFailSrc(t, tt.manifest)
			if len(verr.Problems) != len(tt.want) {
				t.Errorf("want %d problems, got %d:\n%v", len(tt.want), len(verr.Problems), verr)
			}
			for _, w := range tt.want {
				p := problemAt(t, verr, w.path)
				if p.Type != w.typ {
					t.Errorf("%s: type %q, want %q", w.path, p.Type, w.typ)
				}
				if p.Line != w.line || p.Column != w.column {
					t.Errorf("%s: at %d:%d, want %d:%d", w.path, p.Line, p.Column, w.line, w.column)
				}
				if prefix := fmt.Sprintf("%d:%d: %s: ", w.line, w.column, w.path); !strings.HasPrefix(p.String(), prefix) {
					t.Errorf("String() = %q, want prefix %q", p.String(), prefix)
				}
			}
		})
	}
}

func TestLoadJSONManifest(t *testing.T) {
	t.Parallel()
	src := `{"kind": "commonagents.info/v1beta2/tool", "namespace": "tests", "name": "json-tool",
 "description": "From JSON.",
 "parameters": {"properties": {"n": {"type": "integer", "default": 1}}},
 "actions": [{"name": "double", "description": "Doubles n.", "execute": {"cel": {"expression": "'ok'"}}}]}`
	tl := mustLoadSrc(t, src)
	if tl.Name() != "json-tool" || tl.Namespace() != "tests" {
		t.Errorf("identity = %s/%s", tl.Namespace(), tl.Name())
	}
	fns := tl.Functions(tool.Capability{})
	if len(fns) != 1 || fns[0].Name != "json_tool" {
		t.Fatalf("functions = %v", functionNames(fns))
	}
	want := `{"type":"object","properties":{"n":{"default":1,"type":"integer"}},"required":[],"additionalProperties":false}`
	if got := string(fns[0].Parameters); got != want {
		t.Errorf("parameters = %s, want %s", got, want)
	}
}

// TestProblemsSortedNumerically breaks actions[1], actions[2] and actions[10] of an 11-action manifest and checks
// that list indices sort as numbers.
func TestProblemsSortedNumerically(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(manifestHeader("many") + "actions:\n")
	for i := 0; i < 11; i++ {
		switch i {
		case 1, 10:
			fmt.Fprintf(&b, "  - name: a%d\n    execute:\n      cel:\n        expression: \"'ok'\"\n", i) // no description
		case 2:
			fmt.Fprintf(&b, "  - name: a%d\n    description: Broken.\n    execute:\n      cel:\n        expression: \"1 +\"\n", i)
		default:
			b.WriteString(celAction(fmt.Sprintf("a%d", i), ""))
		}
	}
	verr := mustFailSrc(t, b.String())
	var got []string
	for _, p := range verr.Problems {
		got = append(got, p.Path)
	}
	want := []string{"actions[1].description", "actions[2].execute.cel.expression", "actions[10].description"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("order = %q, want %q", got, want)
	}
	for i := 1; i < len(verr.Problems); i++ {
		if verr.Problems[i].Line < verr.Problems[i-1].Line {
			t.Errorf("problem %d (line %d) sorts after problem %d (line %d)", i, verr.Problems[i].Line, i-1,
				verr.Problems[i-1].Line)
		}
	}
}

func TestValidationErrorListsEveryProblem(t *testing.T) {
	t.Parallel()
	src := manifestHeader("errs") + `actions:
  - name: bad name
    execute:
      cel:
        expression: "'ok'"
  - name: other
    description: Other.
    execute: {}
`
	verr := mustFailSrc(t, src)
	if len(verr.Problems) < 3 {
		t.Fatalf("want at least 3 problems, got:\n%v", verr)
	}
	msg := verr.Error()
	lines := strings.Split(msg, "\n")
	if want := fmt.Sprintf("tool: invalid manifest: %d problems", len(verr.Problems)); lines[0] != want {
		t.Errorf("first line = %q, want %q", lines[0], want)
	}
	if len(lines) != len(verr.Problems)+1 {
		t.Errorf("want %d lines, got %d:\n%s", len(verr.Problems)+1, len(lines), msg)
	}
	for i, p := range verr.Problems {
		if i+1 < len(lines) && lines[i+1] != "  "+p.String() {
			t.Errorf("line %d = %q, want %q", i+1, lines[i+1], "  "+p.String())
		}
	}
	for _, path := range []string{"actions[0].name", "actions[0].description", "actions[1].execute"} {
		if !strings.Contains(msg, path+": ") {
			t.Errorf("Error() does not name %s:\n%s", path, msg)
		}
	}
}

func TestValidationErrorSingular(t *testing.T) {
	t.Parallel()
	verr := mustFailSrc(t, strings.Replace(manifestHeader("one"), "namespace: tests\n", "", 1))
	if len(verr.Problems) != 1 {
		t.Fatalf("want 1 problem, got:\n%v", verr)
	}
	if want := "tool: invalid manifest: 1 problem\n  " + verr.Problems[0].String(); verr.Error() != want {
		t.Errorf("Error() = %q, want %q", verr.Error(), want)
	}
	if p := verr.Problems[0]; p.Path != "namespace" || p.Type != "required" {
		t.Errorf("problem = %+v, want required namespace", p)
	}
}
