package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/commonagents-go/tool"
)

var functionsCommand = command{
	name:     "functions",
	synopsis: "FILE [--binding name=value ...] [--key KEY] [--include a,b] [--settings FILE] [--format openai|anthropic|mcp]",
	summary:  "print a manifest's actions as LLM tool definitions (OpenAI, Anthropic or MCP)",
	detail: `Functions loads the manifest and prints a JSON array with one tool definition
per action, in the shape the chosen provider expects:
	openai     {"type":"function","function":{"name","description","parameters"}}
	anthropic  {"name","description","input_schema"}
	mcp        {"name","description","inputSchema"}
Bound parameters are hidden from the schemas, as they are from the LLM.`,
	run: runFunctions,
}

// formats maps each --format value to the shape of one tool definition.
var formats = map[string]func(f tool.Function) any{
	"openai": func(f tool.Function) any {
		return struct {
			Type     string        `json:"type"`
			Function tool.Function `json:"function"`
		}{"function", f}
	},
	"anthropic": func(f tool.Function) any {
		return struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}{f.Name, f.Description, f.Parameters}
	},
	"mcp": func(f tool.Function) any {
		return struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}{f.Name, f.Description, f.Parameters}
	},
}

func runFunctions(ctx context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) int {
	var c tool.Capability
	bindings := bindingFlag(fs)
	fs.StringVar(&c.Key, "key", "", "the capability `KEY` function names start with (default: the tool name)")
	fs.Func("include", "only the actions and events in this comma-separated `list` (default: all; \"\" for none)",
		func(s string) error {
			c.Include = append(append([]string{}, c.Include...), splitList(s)...)
			return nil
		})
	settingsFile := fs.String("settings", "", "a YAML or JSON `FILE` mapping setting keys to values")
	format := fs.String("format", "openai", "the tool-definition `shape`: openai, anthropic or mcp")
	files, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(files) != 1 {
		return usageError(fs, "want exactly one manifest file, got %d", len(files))
	}
	shape, ok := formats[*format]
	if !ok {
		return usageError(fs, "unknown format %q (use openai, anthropic or mcp)", *format)
	}
	opts, err := settingsOption(*settingsFile)
	if err != nil {
		fmt.Fprintf(stderr, "tool functions: %v\n", err)
		return exitProblem
	}
	t, err := tool.LoadFile(ctx, files[0], opts...)
	if err != nil {
		reportLoadError(stderr, stderr, files[0], err)
		return exitProblem
	}
	if len(bindings) > 0 {
		c.Bindings = bindings
	}
	if msg := checkCapability(t, c); msg != "" {
		return usageError(fs, "%s", msg)
	}
	defs := []any{}
	for _, f := range t.Functions(c) {
		defs = append(defs, shape(f))
	}
	out, err := json.MarshalIndent(defs, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "tool functions: %v\n", err)
		return exitProblem
	}
	fmt.Fprintf(stdout, "%s\n", out)
	return exitOK
}

// bindingFlag defines the repeatable --binding flag on fs and returns the map it fills.
func bindingFlag(fs *flag.FlagSet) map[string]any {
	bindings := map[string]any{}
	fs.Func("binding", "bind parameter `name=value` (repeatable); the value is parsed as JSON when it is valid JSON, else it is a string",
		func(s string) error {
			name, value, ok := strings.Cut(s, "=")
			if !ok || name == "" {
				return errors.New("want name=value")
			}
			if _, dup := bindings[name]; dup {
				return fmt.Errorf("%s is bound twice", name)
			}
			bindings[name] = bindingValue(value)
			return nil
		})
	return bindings
}

// contextFlag registers --context: the task context ({context.*} and cel's context) as a JSON object.
func contextFlag(fs *flag.FlagSet) *map[string]any {
	taskContext := new(map[string]any)
	fs.Func("context", "the task context, read by {context.*} and cel's `context`, as a JSON `object`",
		func(s string) error {
			if err := json.Unmarshal([]byte(s), taskContext); err != nil || *taskContext == nil {
				return errors.New("want a JSON object")
			}
			return nil
		})
	return taskContext
}

// contextProblems returns err with the problems of a task configuration told in the command line's terms: a key
// the task context lacks (a "required" problem at "context" or "context.KEY") is given with --context, not through
// TaskConfig.Context, which the library's detail names for Go hosts.
func contextProblems(err error) error {
	var verr *tool.ValidationError
	if !errors.As(err, &verr) {
		return err
	}
	out := &tool.ValidationError{Problems: append([]tool.Problem(nil), verr.Problems...)}
	for i, p := range out.Problems {
		if p.Type == "required" && (p.Path == "context" || strings.HasPrefix(p.Path, "context.")) {
			out.Problems[i].Detail = strings.ReplaceAll(p.Detail, "TaskConfig.Context", "--context")
		}
	}
	return out
}

// bindingValue reads a --binding value: JSON when it is valid JSON (numbers, booleans, objects, quoted strings),
// else the text itself.
func bindingValue(s string) any {
	var v any
	if json.Unmarshal([]byte(s), &v) == nil {
		return v
	}
	return s
}

// checkCapability catches typos the library would ignore here: included names that are neither an action nor an
// event, and bindings of parameters the manifest does not declare. It returns "" when c is fine.
func checkCapability(t *tool.Tool, c tool.Capability) string {
	m := t.Manifest()
	names, params := map[string]bool{}, map[string]bool{}
	addParams := func(schema json.RawMessage) {
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if json.Unmarshal(schema, &s) == nil {
			for p := range s.Properties {
				params[p] = true
			}
		}
	}
	addParams(m.Parameters)
	// The catalog, not the manifest, lists every action: a top-level openapi block may expand into several.
	for _, e := range t.Catalog(tool.Capability{}) {
		names[e.Action] = true
		addParams(e.InputSchema)
	}
	for _, e := range m.Events {
		names[e.Name] = true
		addParams(e.Parameters)
	}
	for _, n := range c.Include {
		if !names[n] {
			return fmt.Sprintf("--include names %q, which is not an action or event of %s (have: %s)",
				n, m.Name, strings.Join(sorted(names), ", "))
		}
	}
	for _, p := range sorted(c.Bindings) {
		if !params[p] {
			return fmt.Sprintf("--binding names %q, which is not a parameter of %s (declared: %s)",
				p, m.Name, strings.Join(sorted(params), ", "))
		}
	}
	return ""
}

func sorted[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// splitList splits a comma-separated flag value, dropping empty items and surrounding spaces.
func splitList(s string) []string {
	out := []string{}
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
