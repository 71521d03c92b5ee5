package main

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// definition is what the tests read back from one tool definition, whatever its format.
type definition struct {
	name, description string
	properties        []string // sorted
	required          []string // as printed
	closed            bool     // additionalProperties: false
}

// readers decode one tool definition of each format, failing on any missing part of the shape.
var readers = map[string]func(t *testing.T, raw map[string]any) definition{
	"openai": func(t *testing.T, raw map[string]any) definition {
		if raw["type"] != "function" || len(raw) != 2 {
			t.Errorf(`want {"type":"function","function":{...}}, got %v`, raw)
		}
		fn, _ := raw["function"].(map[string]any)
		return readDefinition(t, fn, "parameters")
	},
	"anthropic": func(t *testing.T, raw map[string]any) definition { return readDefinition(t, raw, "input_schema") },
	"mcp":       func(t *testing.T, raw map[string]any) definition { return readDefinition(t, raw, "inputSchema") },
}

func readDefinition(t *testing.T, m map[string]any, schemaKey string) definition {
	t.Helper()
	if len(m) != 3 {
		t.Errorf("want exactly name, description and %s, got %v", schemaKey, m)
	}
	d := definition{}
	d.name, _ = m["name"].(string)
	d.description, _ = m["description"].(string)
	schema, ok := m[schemaKey].(map[string]any)
	if !ok {
		t.Fatalf("no %s object in %v", schemaKey, m)
	}
	if schema["type"] != "object" {
		t.Errorf("%s.type = %v, want object", schemaKey, schema["type"])
	}
	props, _ := schema["properties"].(map[string]any)
	d.properties = []string{}
	for p := range props {
		d.properties = append(d.properties, p)
	}
	sort.Strings(d.properties)
	req, _ := schema["required"].([]any)
	d.required = []string{}
	for _, r := range req {
		d.required = append(d.required, r.(string))
	}
	d.closed = schema["additionalProperties"] == false
	return d
}

func TestFunctionsBindings(t *testing.T) {
	t.Parallel()
	githubFile := filepath.Join(okDir, "github-file.yaml")
	issues := filepath.Join(okDir, "issue-tracker.yaml")
	tests := []struct {
		name string
		args []string
		want []definition
	}{
		{
			name: "no bindings",
			args: []string{githubFile},
			want: []definition{
				{"github_file_read_file", "Reads the contents of a file.", []string{"branch", "path"}, []string{"path"}, true},
				{"github_file_write_file", "Creates or updates a file.", []string{"branch", "content", "path"}, []string{"content", "path"}, true},
			},
		},
		{
			name: "a bound required parameter leaves properties and required",
			args: []string{githubFile, "--binding", "path=README.md"},
			want: []definition{
				{"github_file_read_file", "Reads the contents of a file.", []string{"branch"}, []string{}, true},
				{"github_file_write_file", "Creates or updates a file.", []string{"branch", "content"}, []string{"content"}, true},
			},
		},
		{
			name: "two bindings, key and include",
			args: []string{"--key", "repo-files", githubFile, "--binding", "branch=main", "--include", "write_file", "--binding=path=a.txt"},
			want: []definition{
				{"repo_files_write_file", "Creates or updates a file.", []string{"content"}, []string{"content"}, true},
			},
		},
		{
			name: "a JSON number binding",
			args: []string{issues, "--binding", "repo_id=1296269"},
			want: []definition{
				{"issue_tracker_create_issue", "Opens an issue and assigns it to someone.", []string{"assignee", "body", "title"}, []string{"assignee", "title"}, true},
				{"issue_tracker_list_issues", "Lists the repository's issues.", []string{"state"}, []string{}, true},
			},
		},
		{
			name: "include nothing",
			args: []string{githubFile, "--include", ""},
			want: []definition{},
		},
	}
	for _, tt := range tests {
		for format, read := range readers {
			t.Run(tt.name+"/"+format, func(t *testing.T) {
				t.Parallel()
				code, stdout, stderr := runTool(t, append([]string{"functions", "--format", format}, tt.args...)...)
				if code != exitOK {
					t.Fatalf("exit code %d, want 0\nstderr:\n%s", code, stderr)
				}
				var raw []map[string]any
				if err := json.Unmarshal([]byte(stdout), &raw); err != nil {
					t.Fatalf("stdout is not a JSON array: %v\n%s", err, stdout)
				}
				got := []definition{}
				for _, r := range raw {
					got = append(got, read(t, r))
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("definitions:\n got %+v\nwant %+v", got, tt.want)
				}
			})
		}
	}
}

func TestFunctionsDefaultFormatIsOpenAI(t *testing.T) {
	t.Parallel()
	code, stdout, _ := runTool(t, "functions", filepath.Join(okDir, "cel.yaml"), "--include", "format_date")
	if code != exitOK {
		t.Fatalf("exit code %d", code)
	}
	want := `[
  {
    "type": "function",
    "function": {
      "name": "helpers_format_date",
      "description": "Returns the current UTC date.",
      "parameters": {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": false
      }
    }
  }
]
`
	if stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want)
	}
}

func TestBindingValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want any
	}{
		{"octo", "octo"},
		{"", ""},
		{"42", float64(42)},
		{"true", true},
		{"null", nil},
		{`"42"`, "42"},
		{`{"a":[1]}`, map[string]any{"a": []any{float64(1)}}},
		{"main branch", "main branch"},
		{"{not json", "{not json"},
	}
	for _, tt := range tests {
		if got := bindingValue(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("bindingValue(%q) = %#v, want %#v", tt.in, got, tt.want)
		}
	}
}

func TestFunctionsErrors(t *testing.T) {
	t.Parallel()
	githubFile := filepath.Join(okDir, "github-file.yaml")
	broken := writeFile(t, "broken.yaml", brokenManifest)
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no file", []string{"functions"}, exitUsage, "want exactly one manifest file, got 0"},
		{"two files", []string{"functions", githubFile, githubFile}, exitUsage, "want exactly one manifest file, got 2"},
		{"unknown format", []string{"functions", githubFile, "--format", "gemini"}, exitUsage, `unknown format "gemini"`},
		{"binding without =", []string{"functions", githubFile, "--binding", "path"}, exitUsage, "want name=value"},
		{"binding without a name", []string{"functions", githubFile, "--binding", "=x"}, exitUsage, "want name=value"},
		{"binding given twice", []string{"functions", githubFile, "--binding", "path=a", "--binding", "path=b"}, exitUsage, "path is bound twice"},
		{"binding of an undeclared parameter", []string{"functions", githubFile, "--binding", "pth=a"}, exitUsage,
			`--binding names "pth", which is not a parameter of github-file (declared: branch, content, path)`},
		{"include of an unknown action", []string{"functions", githubFile, "--include", "read_file,delete_file"}, exitUsage,
			`--include names "delete_file", which is not an action or event of github-file (have: read_file, write_file)`},
		{"broken manifest", []string{"functions", broken}, exitProblem, broken + ": 10:9: actions[0].execute.cel.expresion: "},
		{"missing manifest", []string{"functions", broken + ".missing"}, exitProblem, "cannot read the manifest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runTool(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d\nstderr:\n%s", code, tt.code, stderr)
			}
			if !strings.Contains(stderr, tt.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderr, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout is not empty:\n%s", stdout)
			}
		})
	}
}

func TestFunctionsBindsEventParameters(t *testing.T) {
	t.Parallel()
	// label is declared only by the event: binding it is allowed (NewTask seals its allow list) and changes no
	// function.
	manifest := writeFile(t, "events.yaml", `kind: "commonagents.info/v1beta2/tool"
namespace: "tests"
name: "labels"
description: "Adds labels and hears about them."
actions:
  - name: add_label
    description: "Returns the label it was given."
    parameters:
      properties:
        name: { type: string }
    execute:
      cel:
        expression: "input.name"
events:
  - name: labeled
    message: "labeled {event.payload.label}"
    parameters:
      properties:
        label: { type: string }
    receive:
      webhook:
        filter: "event.payload.label == parameters.label"
`)
	code, stdout, stderr := runTool(t, "functions", manifest, "--binding", "label=bug", "--format", "anthropic")
	if code != exitOK {
		t.Fatalf("exit code %d\nstderr:\n%s", code, stderr)
	}
	var raw []map[string]any
	if err := json.Unmarshal([]byte(stdout), &raw); err != nil || len(raw) != 1 {
		t.Fatalf("want one definition, got %v:\n%s", err, stdout)
	}
	d := readers["anthropic"](t, raw[0])
	if !reflect.DeepEqual(d.properties, []string{"name"}) || !reflect.DeepEqual(d.required, []string{"name"}) {
		t.Errorf("got %+v, want the name property, required", d)
	}
}
