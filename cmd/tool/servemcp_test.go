package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const calcManifest = `kind: commonagents.info/v1beta2/tool
namespace: tests
name: calc
description: Greets people.
actions:
  - name: greet
    description: Greets someone.
    parameters:
      properties:
        name: {type: string}
        greeting: {type: string, default: "Hello"}
    execute:
      cel:
        expression: "{'greeting': input.greeting + ', ' + input.name}"
  - name: shout
    description: Returns the name in capitals.
    parameters:
      properties:
        name: {type: string}
    execute:
      cel:
        expression: "input.name.upperAscii()"
`

// toolBinary returns a path that runs this command as a separate process: a link named tool to the test binary,
// which TestMain turns into the command when it starts under that name. No go build: the test binary is the
// command, built with the same flags (-race included).
func toolBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "tool")
	if err := os.Symlink(self, link); err != nil {
		t.Fatal(err)
	}
	return link
}

// serveMCP runs `tool serve-mcp manifest extra...` and connects the official go-sdk client to it.
func serveMCP(t *testing.T, manifest string, extra ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(toolBinary(t), append([]string{"serve-mcp", manifest}, extra...)...)
	c := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestServeMCPWithGoSDKClient(t *testing.T) {
	t.Parallel()
	file := writeFile(t, "calc.yaml", calcManifest)
	s := serveMCP(t, file, "--binding", "greeting=Hi")
	ctx := context.Background()

	list, err := s.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tl, err := tool.LoadFile(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	fns := tl.Functions(tool.Capability{Bindings: map[string]any{"greeting": "Hi"}})
	if len(list.Tools) != len(fns) {
		t.Fatalf("%d tools, want %d", len(list.Tools), len(fns))
	}
	for n, f := range fns {
		got := list.Tools[n]
		var want, have any
		_ = json.Unmarshal(f.Parameters, &want)
		raw, _ := json.Marshal(got.InputSchema)
		_ = json.Unmarshal(raw, &have)
		if got.Name != f.Name || got.Description != f.Description || !reflect.DeepEqual(have, want) {
			t.Errorf("tool %d = %s %q %s, want %s %q %s", n, got.Name, got.Description, raw, f.Name, f.Description, f.Parameters)
		}
	}

	tests := []struct {
		name    string
		tool    string
		args    map[string]any
		isError bool
		text    string
		object  map[string]any
	}{
		{name: "object output", tool: "calc_greet", args: map[string]any{"name": "Ada"},
			text: `{"greeting":"Hi, Ada"}`, object: map[string]any{"greeting": "Hi, Ada"}},
		{name: "bound value wins", tool: "calc_greet", args: map[string]any{"name": "Ada", "greeting": "Yo"},
			text: `{"greeting":"Hi, Ada"}`},
		{name: "string output", tool: "calc_shout", args: map[string]any{"name": "ada"}, text: "ADA"},
		{name: "missing argument", tool: "calc_shout", args: map[string]any{}, isError: true,
			text: `{"error":{"kind":"missing_fields","message":"missing required arguments \"name\"","hint":` +
				`{"missing_fields":["name"],"schemas":{"name":{"type":"string"}}`},
		{name: "unknown argument", tool: "calc_shout", args: map[string]any{"name": "a", "x": 1}, isError: true,
			text: `{"error":{"kind":"invalid_arguments","message":"unknown arguments \"x\"","hint":` +
				`{"message":"accepted arguments: name"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tt.tool, Arguments: tt.args})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError != tt.isError || len(res.Content) != 1 {
				t.Fatalf("isError %v, content %v", res.IsError, res.Content)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			if tt.isError && !strings.HasPrefix(text, tt.text) || !tt.isError && text != tt.text {
				t.Errorf("text = %q, want %q", text, tt.text)
			}
			if tt.object != nil {
				var got map[string]any
				raw, _ := json.Marshal(res.StructuredContent)
				if err := json.Unmarshal(raw, &got); err != nil || !reflect.DeepEqual(got, tt.object) {
					t.Errorf("structured content = %s, want %v", raw, tt.object)
				}
			}
		})
	}
}

// The failure `tool help serve-mcp` shows as an example is the text serve-mcp sends for that failure.
func TestServeMCPHelpShowsTheFailureItSends(t *testing.T) {
	t.Parallel()
	_, help, _ := runTool(t, "help", "serve-mcp")
	var example string
	for _, line := range strings.Split(help, "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, `{"error":`) {
			example = l
		}
	}
	if example == "" {
		t.Fatalf("the help shows no failure:\n%s", help)
	}
	// The help's case: an unknown argument x of a function whose only parameter is name.
	s := serveMCP(t, writeFile(t, "calc.yaml", calcManifest))
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "calc_shout",
		Arguments: map[string]any{"name": "a", "x": 1}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || len(res.Content) != 1 {
		t.Fatalf("isError %v, content %v: want one text block of a failure", res.IsError, res.Content)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; text != example {
		t.Errorf("serve-mcp sends\n%s\nthe help says\n%s", text, example)
	}
}

// TestServeMCPRoundTrip runs our own mcp backend against our own serve-mcp process.
func TestServeMCPRoundTrip(t *testing.T) {
	t.Parallel()
	calc := writeFile(t, "calc.yaml", calcManifest)
	client := writeFile(t, "client.yaml", `kind: commonagents.info/v1beta2/tool
namespace: tests
name: remote
description: Calls calc through MCP.
mcp:
  transport: stdio
  command: `+toolBinary(t)+`
  args: ["serve-mcp", "`+calc+`"]
actions:
  - name: greet
    description: Greets through the served tool.
    parameters:
      properties:
        name: {type: string}
    execute:
      mcp:
        tool_name: calc_greet
  - name: shout
    description: Shouts through the served tool.
    parameters:
      properties:
        name: {type: string, default: ""}
    execute:
      mcp:
        tool_name: calc_shout
  - name: greet_anything
    description: Sends any name, checked on the far side only.
    parameters:
      properties:
        name: {}
    execute:
      mcp:
        tool_name: calc_greet
`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tl, err := tool.LoadFile(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	task, err := tl.NewTask(ctx, tool.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = task.Close(ctx) }()
	res, err := task.Invoke(ctx, "greet", map[string]any{"name": "Ada"})
	if err != nil || res.IsError || string(res.OutputJSON) != `{"greeting":"Hello, Ada"}` {
		t.Fatalf("greet: %v %+v", err, res)
	}
	res, err = task.Invoke(ctx, "shout", map[string]any{"name": "ada"})
	if err != nil || res.Output != "ADA" {
		t.Fatalf("shout: %v %+v", err, res)
	}
	// A recoverable error on the far side stays recoverable here.
	res, err = task.Invoke(ctx, "greet_anything", map[string]any{"name": 5})
	if err != nil || !res.IsError || res.Error.Kind != "tool_error" || !strings.Contains(res.Error.Message, "invalid_arguments") {
		t.Fatalf("greet with a number: %v %+v", err, res)
	}
}
