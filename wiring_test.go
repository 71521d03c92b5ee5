package tool_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/commonagents-go/tool"
)

// NewTask refuses a task whose Context lacks a key an included action always reads, naming the key and where the
// manifest reads it; reads under a condition, presence tests, and actions the capability leaves out don't count.
func TestNewTaskRefusesAMissingContext(t *testing.T) {
	tl := mustLoadSrc(t, `kind: commonagents.info/v1beta2/tool
namespace: tests
name: wiring
description: Reads the task context.
actions:
  - name: greet
    description: Greets the agent's team.
    execute:
      cel:
        expression: "'hello ' + context.team"
  - name: maybe
    description: Reads a key only when present.
    execute:
      cel:
        expression: "has(context.region) ? context.region : 'anywhere'"
  - name: fetch
    description: Reads the org from a template.
    execute:
      stateless_http:
        method: GET
        url: "https://example.com/{context.org}/items"
`)
	ctx := context.Background()
	_, err := tl.NewTask(ctx, tool.TaskConfig{})
	var ve *tool.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("NewTask without a Context = %v, want a *ValidationError", err)
	}
	var paths []string
	for _, p := range ve.Problems {
		paths = append(paths, p.Path)
	}
	if !slices.Equal(paths, []string{"context.team", "context.org"}) {
		t.Errorf("problems at %v, want context.team and context.org", paths)
	}
	if msg := err.Error(); !strings.Contains(msg, "invalid task configuration") ||
		!strings.Contains(msg, "actions[0].execute.cel.expression") || !strings.Contains(msg, "{context.org}") {
		t.Errorf("error = %q, want it to say where the manifest reads each key", msg)
	}

	// A capability without the actions that read the keys needs no Context.
	task, err := tl.NewTask(ctx, tool.TaskConfig{Capability: tool.Capability{Include: []string{"maybe"}}})
	if err != nil {
		t.Fatalf("NewTask of an action that reads context only after has(): %v", err)
	}
	if res := mustInvoke(t, task, "maybe", nil); res.Output != "anywhere" {
		t.Errorf("maybe = %v, want anywhere", res.Output)
	}
	_ = task.Close(ctx)

	task, err = tl.NewTask(ctx, tool.TaskConfig{Context: map[string]any{"team": "core", "org": "acme"}})
	if err != nil {
		t.Fatalf("NewTask with the keys given: %v", err)
	}
	_ = task.Close(ctx)
}

// Task.Functions and Task.Catalog use the task's own capability, so what the LLM is offered is what
// InvokeFunction accepts.
func TestTaskFunctionsUseItsCapability(t *testing.T) {
	tl := mustLoadSrc(t, calcManifest)
	capability := tool.Capability{Key: "math", Include: []string{"add", "whoami"}, Bindings: map[string]any{"owner": "octo"}}
	task := newTask(t, tl, tool.TaskConfig{Capability: capability, Context: calcContext})
	var names []string
	for _, f := range task.Functions() {
		names = append(names, f.Name)
		args := `{}`
		if f.Action == "add" {
			args = `{"a": 1}`
		}
		res, err := task.InvokeFunction(context.Background(), f.Name, []byte(args))
		if err != nil || res.IsError {
			t.Errorf("InvokeFunction(%s) = %+v, %v", f.Name, res, err)
		}
	}
	if !slices.Equal(names, []string{"math_add", "math_whoami"}) {
		t.Errorf("Functions() = %v, want math_add, math_whoami", names)
	}
	var catalog []string
	for _, e := range task.Catalog() {
		catalog = append(catalog, e.Function)
	}
	if want := []string{"math_add", "math_whoami", "math_fail"}; !slices.Equal(catalog, want) {
		t.Errorf("Catalog() functions = %v, want %v", catalog, want)
	}
}

// An unrecoverable failure is reported and leaves the task open (SPEC §7.1): the host, not the library, ends it,
// and until it does the task's other functions still work.
func TestUnrecoverableLeavesTheTaskToTheHost(t *testing.T) {
	tl := mustLoadSrc(t, `kind: commonagents.info/v1beta2/tool
namespace: tests
name: files
description: Reads the mount.
actions:
  - name: read
    description: Reads a file of the mount.
    execute:
      cel:
        expression: "mount.read('notes.txt')"
  - name: hello
    description: Says hello.
    execute:
      cel:
        expression: "'hello'"
`)
	task := newTask(t, tl, tool.TaskConfig{}) // no Mount: mount.read is a configuration error at run time
	_, err := task.Invoke(context.Background(), "read", nil)
	if !errors.Is(err, tool.ErrUnrecoverable) {
		t.Fatalf("read without a mount = %v, want ErrUnrecoverable", err)
	}
	if res := mustInvoke(t, task, "hello", nil); res.Output != "hello" {
		t.Errorf("hello after the unrecoverable failure = %v, want hello", res.Output)
	}
	if err := task.Close(context.Background()); err != nil {
		t.Errorf("the host's Close = %v", err)
	}
}
