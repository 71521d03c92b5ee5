package mcp_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/internal/httpspec/httpspectest"
	"github.com/commonagents-go/tool/runtime"
	"github.com/commonagents-go/tool/runtime/mcp"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func sharedBlock(discover bool) *runtime.Block {
	return &runtime.Block{
		Kind: mcp.Kind, Tool: "mcptest", Path: field.NewPath("mcp"), SharedPath: field.NewPath("mcp"),
		Shared: map[string]any{"transport": "stdio", "command": serverBin,
			"env": map[string]any{"MCPSERVER_STARTS": "{settings.starts}"}},
		Check: &httpspectest.Checker{}, Discover: discover,
		Values: httpspectest.Roots{"settings": map[string]any{"starts": ""}},
	}
}

func TestExpandListsTheServersTools(t *testing.T) {
	t.Parallel()
	exp, err := mcp.Backend{}.Expand(context.Background(), sharedBlock(true))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]runtime.Expanded{}
	for _, a := range exp.Actions {
		byName[a.Name] = a
	}
	for _, name := range []string{"echo", "add", "fail", "slow", "progress", "crash", "image", "pid", "env"} {
		if _, ok := byName[name]; !ok {
			t.Errorf("no action %s; actions %v", name, slices.Collect(maps.Keys(byName)))
		}
	}
	skipped := map[string]string{}
	for _, s := range exp.Skipped {
		skipped[s.Name] = s.Reason
	}
	if len(skipped) != 2 || skipped["unusable"] == "" || skipped["dotted.name"] == "" {
		t.Errorf("skipped = %v, want unusable and dotted.name with reasons", skipped)
	}

	add := byName["add"]
	props, _ := add.Parameters["properties"].(map[string]any)
	if add.Parameters["type"] != "object" || len(props) != 2 || !slices.Equal(add.Parameters["required"].([]any), []any{"a", "b"}) {
		t.Errorf("add parameters = %v", add.Parameters)
	}
	if add.Description != "Adds two numbers." {
		t.Errorf("add description = %q", add.Description)
	}
	if opt := byName["fail"].Parameters["required"].([]any); len(opt) != 0 {
		t.Errorf("fail has required %v; the server declared none", opt)
	}
	if a := byName["echo"].Annotations; a == nil || !a.ReadOnly || !a.Idempotent || a.Destructive {
		t.Errorf("echo annotations = %+v, want read-only and idempotent", a)
	}
	if byName["add"].Annotations != nil {
		t.Errorf("add annotations = %+v, want none (the server gives no hints)", byName["add"].Annotations)
	}

	// The expanded action calls the shared server.
	inst, err := mcp.Backend{}.Initialize(context.Background(), &runtime.Init{
		Action: add.Action, Values: httpspectest.Roots{"settings": map[string]any{"starts": ""}},
		Observe: func(context.Context, string, map[string]any) {}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = inst.Teardown(context.Background()) }()
	res, err := inst.Invoke(context.Background(), add.Action, &runtime.Call{ID: "c1", Action: "add",
		Args: map[string]any{"a": 1, "b": 2}, Values: httpspectest.Roots{}})
	if err != nil || res.Error != nil {
		t.Fatalf("add: %v %+v", err, res)
	}
	if got := res.Output.(map[string]any)["sum"]; got == nil || got.(interface{ String() string }).String() != "3" {
		t.Errorf("sum = %v, want 3", got)
	}
}

func TestExpandNeedsConsent(t *testing.T) {
	t.Parallel()
	exp, err := mcp.Backend{}.Expand(context.Background(), sharedBlock(false))
	if err != nil || len(exp.Actions) != 0 || len(exp.Skipped) != 0 {
		t.Fatalf("expansion without Discover = %+v, %v; want nothing", exp, err)
	}
}

func TestExpandServerFailure(t *testing.T) {
	t.Parallel()
	b := sharedBlock(true)
	b.Shared.(map[string]any)["env"] = map[string]any{"MCPSERVER_FAIL_START": "cannot list today"}
	if _, err := (mcp.Backend{}).Expand(context.Background(), b); err == nil {
		t.Fatal("expanding with a server that cannot start succeeded")
	}
}

func TestParametersInlineLocalRefs(t *testing.T) {
	t.Parallel()
	got, whole, err := mcp.Parameters([]byte(`{"type":"object","$defs":{"id":{"type":"string","minLength":1}},
		"properties":{"id":{"$ref":"#/$defs/id"},"ids":{"type":"array","items":{"$ref":"#/$defs/id"}},
		"kind":{"enum":[{"$ref":"#/nowhere"}]}},"required":["id"]}`))
	if err != nil {
		t.Fatal(err)
	}
	props := got["properties"].(map[string]any)
	if props["id"].(map[string]any)["type"] != "string" || props["ids"].(map[string]any)["items"].(map[string]any)["type"] != "string" {
		t.Errorf("refs not inlined: %v", got)
	}
	if _, ok := got["$defs"]; ok {
		t.Errorf("$defs kept: %v", got)
	}
	if _, ok := whole["$defs"]; !ok {
		t.Errorf("the whole schema lost its $defs: %v", whole)
	}
	bad := []struct{ name, schema string }{
		{"remote", `{"type":"object","properties":{"x":{"$ref":"https://example.com/x"}}}`},
		{"dangling", `{"type":"object","properties":{"x":{"$ref":"#/$defs/missing"}}}`},
		{"array", `{"type":"array"}`},
		{"false", `false`},
		{"not a schema", `"object"`},
	}
	for _, b := range bad {
		if _, _, err := mcp.Parameters([]byte(b.schema)); err == nil {
			t.Errorf("%s: accepted", b.name)
		}
	}
}

// TestParametersKeepWhatTheServerSent pins issue 29: a schema the inliner cannot flatten, a keyword the walker
// does not know, a boolean or type-less schema are used as the server sent them, not refused.
func TestParametersKeepWhatTheServerSent(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, schema, llmHas string }{
		{"recursive", `{"type":"object","$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}}}},
			"properties":{"n":{"$ref":"#/$defs/n"}}}`, "$defs"},
		{"anchor", `{"$defs":{"n":{"$anchor":"node","type":"string"}},"properties":{"n":{"$ref":"#node"}}}`, "$defs"},
		{"embedded resource", `{"$defs":{"c":{"$id":"https://example.com/c","$defs":{"n":{"type":"string"}},
			"$ref":"#/$defs/n"},"n":{"type":"integer"}},"properties":{"x":{"$ref":"#/$defs/c"}}}`, "$defs"},
		{"unknown keyword", `{"type":"object","properties":{"x":{"type":"string","x_widget":2}}}`, "properties"},
		{"true", `true`, "properties"},
		{"absent", ``, "properties"},
		{"type-less with root keywords", `{"anyOf":[{"required":["a"]},{"required":["b"]}],
			"properties":{"a":{},"b":{}}}`, "anyOf"},
		{"$ref siblings", `{"$defs":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/s","maxLength":3}}}`,
			"properties"},
	} {
		llm, whole, err := mcp.Parameters([]byte(tt.schema))
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if _, ok := llm[tt.llmHas]; !ok || whole == nil {
			t.Errorf("%s: llm copy %v lacks %s (whole %v)", tt.name, llm, tt.llmHas, whole)
		}
	}
	llm, _, _ := mcp.Parameters([]byte(`{"$defs":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/s","maxLength":3}}}`))
	a := llm["properties"].(map[string]any)["a"].(map[string]any)
	if a["maxLength"] == nil || a["allOf"] == nil {
		t.Errorf("the $ref's sibling was dropped from the LLM copy: %v", a)
	}
}

// TestLoadExpandsTheTopLevelServer runs the expansion through tool.Load: with WithDiscovery the server's tools
// become functions and actions that call it; without it, or with a declared mcp action, nothing is listed.
func TestLoadExpandsTheTopLevelServer(t *testing.T) {
	src := manifest(stdioServer())
	src = strings.Replace(src, "actions:\n", "actions:\n  - name: local\n    description: A local action.\n    execute:\n      cel:\n        expression: \"1\"\n", 1)
	tl := load(t, src, tool.WithDiscovery(true))
	var names []string
	for _, f := range tl.Functions(tool.Capability{}) {
		names = append(names, f.Action)
	}
	for _, want := range []string{"local", "echo", "add"} {
		if !slices.Contains(names, want) {
			t.Errorf("functions %v lack %q", names, want)
		}
	}
	if len(tl.Skipped()) == 0 {
		t.Error("the test server's unusable tools are not reported as skipped")
	}
	task := newTask(t, tl)
	res, err := task.Invoke(context.Background(), "add", map[string]any{"a": 2, "b": 3})
	if err != nil || res.IsError || fmt.Sprint(res.Output) != "map[sum:5]" {
		t.Fatalf("add through the expanded action = %+v, %v", res, err)
	}

	if got := load(t, src).Functions(tool.Capability{}); len(got) != 1 {
		t.Errorf("without WithDiscovery: %d functions, want only the declared one", len(got))
	}
	bound := load(t, manifest(stdioServer(), "echo"), tool.WithDiscovery(true))
	if got := bound.Functions(tool.Capability{}); len(got) != 1 {
		t.Errorf("with an action bound to the block: %d functions, want 1 (no expansion)", len(got))
	}
}

// TestExpandBoundedByTheServerTimeout: Load with discovery ends after the block's timeout when the server never
// answers, with the problem at the block, and the server it started is gone.
func TestExpandBoundedByTheServerTimeout(t *testing.T) {
	t.Parallel()
	block, pidFile := hangingStdio(t, "  ")
	src := "kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: mcptest\ndescription: d\nmcp:\n" + block +
		"  timeout: 300ms\n"
	done := make(chan error, 1)
	go func() {
		_, err := tool.Load(context.Background(), []byte(src), tool.WithDiscovery(true))
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "deadline") {
			t.Errorf("Load: %v, want a problem naming the deadline", err)
		}
		if strings.Contains(err.Error(), "mcp: mcp:") {
			t.Errorf("doubled prefix: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Load still blocked after 5s on a server that never answers (block timeout 300ms)")
	}
	if pid := readPID(pidFile); pid > 0 {
		waitGone(t, pid, time.Second)
	}
}

// TestExpansionAndDeclaredActions pins the documented behaviour: any declared mcp action, even one with a server
// of its own, turns the top-level block's expansion off (runtime.Block.Used cannot tell them apart); without
// discovery a top-level block and no actions loads with no functions.
func TestExpansionAndDeclaredActions(t *testing.T) {
	t.Parallel()
	head := "kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: mcptest\ndescription: d\nmcp:\n" + stdioServer()
	own := "actions:\n  - name: own\n    description: Own server.\n    parameters:\n      properties:\n" +
		"        text: {type: string}\n    execute:\n      mcp:\n        tool_name: echo\n        transport: stdio\n" +
		"        command: " + serverBin + "\n"
	cases := []struct {
		name     string
		src      string
		discover bool
		want     int
	}{
		{"own-server action blocks expansion", head + own, true, 1},
		{"no discovery, no actions", head, false, 0},
		{"discovery, no actions", head, true, 9}, // the test server's tools less the two skipped
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tl := load(t, c.src, tool.WithDiscovery(c.discover))
			if n := len(tl.Functions(tool.Capability{})); n != c.want {
				t.Errorf("%d functions, want %d", n, c.want)
			}
		})
	}
}

// TestExpandedActionTakesTheBlocksTimeout: an action expanded from tools/list is bounded by the top-level block's
// timeout, as a declared one is, not by the host's longer call limit.
func TestExpandedActionTakesTheBlocksTimeout(t *testing.T) {
	t.Parallel()
	cs := &counting{delay: 30 * time.Second} // longer than the block's bound, shorter than the host's
	srv := httptest.NewServer(server.NewStreamableHTTPServer(cs.mcpServer()))
	t.Cleanup(srv.Close)
	src := "kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: mcptest\ndescription: d\nmcp:\n" +
		"  transport: streamable_http\n  url: " + srv.URL + "/mcp\n  timeout: 2s\n"
	tl := load(t, src, tool.WithDiscovery(true), tool.WithLimits(tool.Limits{CallTimeout: 10 * time.Minute}))
	task := newTask(t, tl)
	res, err := task.Invoke(context.Background(), "record", map[string]any{"note": "a"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Error == nil || res.Error.Kind != runtime.KindTimeout || !strings.Contains(res.Error.Message, "within 2s") {
		t.Fatalf("result %+v, want a timeout after the block's 2s", res.Error)
	}
}

// TestDeclaredActionsGetUpstreamHints: with discovery on, an action declared by hand for an MCP tool gets the
// tool's hints and title in the catalog (echo is read-only and idempotent, titled "Echo"), on the top-level server
// and on a server of its own; a manifest annotation of the same flag wins; without discovery nothing is listed and
// the backend's defaults hold.
func TestDeclaredActionsGetUpstreamHints(t *testing.T) {
	t.Parallel()
	declared := func(name, extra string) string {
		return "  - name: " + name + "\n    description: Echoes.\n" + extra + "    parameters:\n      properties:\n" +
			"        text: {type: string}\n    execute:\n      mcp:\n        tool_name: echo\n"
	}
	src := "kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: mcptest\ndescription: d\nmcp:\n" +
		stdioServer() + "actions:\n" + declared("plain", "") +
		declared("overridden", "    annotations: {idempotent: false, open_world: false}\n") +
		declared("own", "") + indent(stdioServer(), "      ")
	for _, discover := range []bool{true, false} {
		entries := map[string]tool.CatalogEntry{}
		for _, e := range load(t, src, tool.WithDiscovery(discover)).Catalog(tool.Capability{}) {
			entries[e.Action] = e
		}
		for _, name := range []string{"plain", "overridden", "own"} {
			e := entries[name]
			title, readOnly, idempotent, openWorld := "Echo", true, name != "overridden", name != "overridden"
			if !discover { // the backend's defaults: a call whose effect the server decides
				title, readOnly, idempotent = "", false, false
			}
			if e.Title != title || e.IsReadOnly != readOnly || e.IsDestructive == readOnly ||
				e.IsIdempotent != idempotent || e.IsOpenWorld != openWorld {
				t.Errorf("discover %v, %s: title %q read-only %v destructive %v idempotent %v open world %v; want %q %v "+
					"%v %v %v", discover, name, e.Title, e.IsReadOnly, e.IsDestructive, e.IsIdempotent, e.IsOpenWorld,
					title, readOnly, !readOnly, idempotent, openWorld)
			}
		}
	}
}

// TestOwnServersGiveDeclaredActionsTheirHints: in a manifest with no top-level mcp block, actions declared with
// servers of their own get the hints and title of the tools they call at load, with discovery on: over stdio
// (echo: read-only and idempotent, titled "Echo") and over streamable HTTP (lookup: not destructive, closed world,
// titled by its annotations' title only). A manifest annotation wins flag by flag. Without discovery no server is
// contacted, and the backend's defaults hold.
func TestOwnServersGiveDeclaredActionsTheirHints(t *testing.T) {
	t.Parallel()
	lookup := server.NewMCPServer("lookup", "1.0.0", server.WithToolCapabilities(false))
	lookup.AddTool(mcpgo.NewTool("lookup", mcpgo.WithDescription("Looks a key up."), mcpgo.WithString("key"),
		mcpgo.WithTitleAnnotation("Look up"), mcpgo.WithDestructiveHintAnnotation(false),
		mcpgo.WithOpenWorldHintAnnotation(false)),
		func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText("found"), nil
		})
	var requests atomic.Int32
	h := server.NewStreamableHTTPServer(lookup)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	starts := filepath.Join(t.TempDir(), "starts")

	action := func(name, toolName, extra, params, block string) string {
		return "  - name: " + name + "\n    description: Calls " + toolName + ".\n" + extra +
			"    parameters:\n      properties:\n" + params + "    execute:\n      mcp:\n        tool_name: " +
			toolName + "\n" + indent(block, "      ")
	}
	stdio := stdioServer("MCPSERVER_STARTS: " + starts)
	remote := "  transport: streamable_http\n  url: " + srv.URL + "/mcp\n"
	src := "kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: own\ndescription: d\nactions:\n" +
		action("echo", "echo", "", toolParams["echo"], stdio) +
		action("echo_overridden", "echo", "    annotations: {idempotent: false, open_world: false}\n",
			toolParams["echo"], stdio) +
		action("lookup", "lookup", "", "        key: {type: string}\n", remote)

	type want struct {
		title                                        string
		readOnly, destructive, idempotent, openWorld bool
	}
	defaults := want{destructive: true, openWorld: true} // a call whose effect the server decides
	for _, discover := range []bool{false, true} {
		tl := load(t, src, tool.WithDiscovery(discover))
		if w := tl.Warnings(); len(w) > 0 {
			t.Errorf("discover %v: warnings %v", discover, w)
		}
		wants := map[string]want{"echo": defaults, "echo_overridden": {destructive: true}, "lookup": defaults}
		servers := 0
		if discover {
			wants = map[string]want{
				"echo":            {title: "Echo", readOnly: true, idempotent: true, openWorld: true},
				"echo_overridden": {title: "Echo", readOnly: true},
				"lookup":          {title: "Look up"},
			}
			servers = 2 // each block is a server of its own, listed once
		}
		for _, e := range tl.Catalog(tool.Capability{}) {
			got := want{e.Title, e.IsReadOnly, e.IsDestructive, e.IsIdempotent, e.IsOpenWorld}
			if got != wants[e.Action] {
				t.Errorf("discover %v, %s: %+v, want %+v", discover, e.Action, got, wants[e.Action])
			}
			delete(wants, e.Action)
		}
		if len(wants) > 0 {
			t.Errorf("discover %v: no catalog entries for %v", discover, wants)
		}
		if n := len(lines(t, starts)); n != servers {
			t.Errorf("discover %v: %d stdio servers started at load, want %d", discover, n, servers)
		}
		if n := requests.Load(); (n > 0) != discover {
			t.Errorf("discover %v: the HTTP server got %d requests at load", discover, n)
		}
	}
}

// TestAManifestWithProblemsStartsNoServerForHints: with discovery on, Load lists no server for hints once the
// manifest has problems (here an action without a description): it fails anyway.
func TestAManifestWithProblemsStartsNoServerForHints(t *testing.T) {
	t.Parallel()
	starts := filepath.Join(t.TempDir(), "starts")
	src := "kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: own\ndescription: d\nmcp:\n" +
		stdioServer("MCPSERVER_STARTS: "+starts) + "actions:\n  - name: echo\n    parameters:\n      properties:\n" +
		toolParams["echo"] + "    execute:\n      mcp: {}\n"
	if _, err := tool.Load(context.Background(), []byte(src), tool.WithDiscovery(true)); err == nil {
		t.Fatal("Load accepted an action without a description")
	}
	if n := len(lines(t, starts)); n != 0 {
		t.Errorf("%d servers started for a manifest that does not load", n)
	}
}
