package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The official MCP conformance suite (@modelcontextprotocol/conformance 0.1.16, installed by
// scripts/mcp-conformance.sh) against serve-mcp --http (server scenarios), through serve-mcp as a gateway in front
// of mcp-go's own conformance server (transparency), and against the mcp backend (client scenarios). Without CI
// set, the tests skip where the suite cannot be installed; under CI a failed install fails them.

var (
	suiteOnce sync.Once
	suiteDir  string
	suiteErr  error
)

// conformanceSuite returns the node binary and the suite's entry point, installing them once.
func conformanceSuite(t *testing.T) (node, suite string) {
	t.Helper()
	if testing.Short() {
		t.Skip("the MCP conformance suite runs node for each scenario: not in -short")
	}
	suiteOnce.Do(func() {
		out, err := exec.Command("bash", filepath.Join("..", "..", "scripts", "mcp-conformance.sh")).Output()
		if err != nil {
			var stderr string
			if e, ok := err.(*exec.ExitError); ok {
				stderr = string(e.Stderr)
			}
			suiteErr = fmt.Errorf("%v: %s", err, stderr)
			return
		}
		suiteDir = strings.TrimSpace(string(out))
	})
	if suiteErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("installing the MCP conformance suite: %v", suiteErr)
		}
		t.Skipf("the MCP conformance suite cannot be installed here (node >= 22 through npm): %v", suiteErr)
	}
	return filepath.Join(suiteDir, "node"), filepath.Join(suiteDir, "suite")
}

var suiteTotals = regexp.MustCompile(`Passed: (\d+)/(\d+), (\d+) failed`)

// scenario runs one scenario of the suite (mode "server" with --url, "client" with --command) and returns whether
// every check passed, with the suite's output.
func scenario(t *testing.T, mode, target, name string) (bool, string) {
	t.Helper()
	node, suite := conformanceSuite(t)
	flag := "--url"
	if mode == "client" {
		flag = "--command"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, _ := exec.CommandContext(ctx, node, suite, mode, flag, target, "--scenario", name).CombinedOutput()
	m := suiteTotals.FindSubmatch(out)
	if m == nil {
		return false, string(out)
	}
	passed, _ := strconv.Atoi(string(m[1]))
	total, _ := strconv.Atoi(string(m[2]))
	return passed == total && total > 0, string(out)
}

// conformanceManifest has the tools the suite's server scenarios call, named by action (--action-names).
const conformanceManifest = `kind: commonagents.info/v1beta2/tool
namespace: conformance
name: test
description: The tools the MCP conformance suite's server scenarios call.
actions:
  - name: test_simple_text
    description: Returns a simple text.
    parameters:
      properties: {}
    execute:
      cel:
        expression: "'This is a simple text response for testing.'"
  - name: test_error_handling
    description: Always fails.
    parameters:
      properties: {}
    execute:
      cel:
        expression: "int('not a number')"
  - name: json_schema_2020_12_tool
    description: Tool with JSON Schema 2020-12 features
    parameters:
      $schema: "https://json-schema.org/draft/2020-12/schema"
      type: object
      $defs:
        address:
          type: object
          properties:
            street: {type: string}
            city: {type: string}
      properties:
        name: {type: string}
        address: {$ref: "#/$defs/address"}
      additionalProperties: false
    execute:
      cel:
        expression: "'ok'"
`

// TestMCPConformanceServer: serve-mcp --http passes every server scenario that applies to a server of tools, and
// answers the capabilities it does not offer with -32601.
func TestMCPConformanceServer(t *testing.T) {
	t.Parallel()
	conformanceSuite(t)
	srv := serveMCPHTTP(t, writeFile(t, "test.yaml", conformanceManifest), nil, "--action-names")
	for _, name := range []string{"server-initialize", "ping", "tools-list", "tools-call-simple-text",
		"tools-call-error", "server-sse-multiple-streams", "dns-rebinding-protection", "json-schema-2020-12",
		"logging-set-level"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if ok, out := scenario(t, "server", srv.url, name); !ok {
				t.Errorf("%s fails:\n%s", name, out)
			}
		})
	}
	for _, name := range []string{"completion-complete", "resources-list", "prompts-list"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, out := scenario(t, "server", srv.url, name); !strings.Contains(out, "-32601") {
				t.Errorf("%s: not answered -32601 (method not found):\n%s", name, out)
			}
		})
	}
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// mcpgoConformance builds and starts mcp-go's conformance server (examples/conformance of the mcp-go module this
// module requires) and returns its URL.
func mcpgoConformance(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mcpgo-conformance")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/mark3labs/mcp-go/examples/conformance").
		CombinedOutput(); err != nil {
		t.Fatalf("building mcp-go's conformance server: %v\n%s", err, out)
	}
	// The server takes its address from the environment and cannot report a port of its own choosing: it gets
	// one that was free a moment ago. Readiness is polled at /health.
	return startOnFreeAddr(t, "mcp-go's conformance server", func(addr string) *exec.Cmd {
		cmd := exec.Command(bin)
		cmd.Env = append(cmd.Environ(), "CONFORMANCE_ADDR="+addr)
		return cmd
	}, func(addr string) bool {
		resp, err := http.Get("http://" + addr + "/health")
		if err == nil {
			_ = resp.Body.Close()
		}
		return err == nil
	})
}

// startOnFreeAddr starts the server command(addr) makes on an address that was free a moment ago, and returns
// its MCP URL once ready(addr) says it serves. When another process took the address first, the server exits (it
// cannot bind) and is started again on another, three times at most. It waits a minute at most for each start.
func startOnFreeAddr(t *testing.T, who string, command func(addr string) *exec.Cmd, ready func(addr string) bool) string {
	t.Helper()
	for attempt := 1; ; attempt++ {
		addr := freeAddr(t)
		cmd := command(addr)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
		})
		if waitReady(addr, exited, ready) {
			return "http://" + addr + "/mcp"
		}
		if attempt == 3 {
			t.Fatalf("%s did not come up on %d addresses", who, attempt)
		}
	}
}

// waitReady waits until ready(addr) (true), or until the server exits or a minute passes (false).
func waitReady(addr string, exited <-chan struct{}, ready func(string) bool) bool {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(time.Minute)
	for {
		if ready(addr) {
			return true
		}
		select {
		case <-exited:
			return false
		case <-deadline:
			return false
		case <-tick.C:
		}
	}
}

// gatewayManifest discovers every tool of the server at url.
func gatewayManifest(url string) string {
	return `kind: commonagents.info/v1beta2/tool
namespace: conformance
name: gateway
description: Every tool of an upstream MCP server, served again.
mcp:
  transport: streamable_http
  url: ` + url + "\n"
}

// TestMCPConformanceTransparency: serve-mcp --http in front of mcp-go's conformance server, discovering every tool,
// passes every scenario about tools the conformance server passes on its own: 10 of the 11 here (it fails
// json-schema-2020-12 alone). The logging and progress scenarios are left to TestMCPConformanceForwardsNotifications:
// mcp-go's server sends some of their notifications after the result, so that they pass or fail by chance, alone too.
func TestMCPConformanceTransparency(t *testing.T) {
	t.Parallel()
	conformanceSuite(t)
	upstream := mcpgoConformance(t)
	gw := serveMCPHTTP(t, writeFile(t, "gw.yaml", gatewayManifest(upstream)), nil, "--discover", "--action-names")
	var scenarios []string
	for _, name := range toolScenarios {
		if name != "tools-call-with-logging" && name != "tools-call-with-progress" {
			scenarios = append(scenarios, name)
		}
	}
	if n := throughGateway(t, upstream, gw.url, "mcp-go's conformance server", scenarios); n < 10 {
		t.Errorf("mcp-go's conformance server passes only %d scenarios about tools on its own, want at least 10", n)
	}
}

// notifyingUpstream serves the suite's logging and progress tools, each sending all three notifications the
// scenarios ask for (mcp-go's conformance server sends two of three) and answering at once.
func notifyingUpstream(t *testing.T) string {
	t.Helper()
	s := server.NewMCPServer("notifying", "1.0.0", server.WithToolCapabilities(false), server.WithLogging())
	s.AddTool(mcpgo.NewTool("test_tool_with_logging", mcpgo.WithDescription("Logs three messages.")),
		func(ctx context.Context, _ mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			srv := server.ServerFromContext(ctx)
			for _, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
				_ = srv.SendLogMessageToClient(ctx, mcpgo.NewLoggingMessageNotification(mcpgo.LoggingLevelInfo, "test", msg))
			}
			return mcpgo.NewToolResultText("Tool with logging executed successfully"), nil
		})
	s.AddTool(mcpgo.NewTool("test_tool_with_progress", mcpgo.WithDescription("Reports three steps.")),
		func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			srv := server.ServerFromContext(ctx)
			var token mcpgo.ProgressToken
			if req.Params.Meta != nil {
				token = req.Params.Meta.ProgressToken
			}
			for n := 0; n <= 100 && token != nil; n += 50 {
				_ = srv.SendNotificationToClient(ctx, string(mcpgo.MethodNotificationProgress),
					map[string]any{"progressToken": token, "progress": n, "total": 100})
			}
			return mcpgo.NewToolResultText("Tool with progress executed successfully"), nil
		})
	// The notifications go on the call's own stream, ahead of the result, by construction: the event store makes
	// mcp-go drain them before the result (without one, a notification its forwarder holds as the result goes out
	// is dropped), and with no listening stream (405 to GET) none goes there instead.
	h := server.NewStreamableHTTPServer(s, server.WithEventStore(server.NewInMemoryEventStore()))
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			http.Error(w, "no listening stream", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String() + "/mcp"
}

// TestMCPConformanceForwardsNotifications: through the gateway, an upstream's log messages and progress reach the
// suite's client: tools-call-with-logging and tools-call-with-progress pass.
func TestMCPConformanceForwardsNotifications(t *testing.T) {
	t.Parallel()
	conformanceSuite(t)
	gw := serveMCPHTTP(t, writeFile(t, "gw.yaml", gatewayManifest(notifyingUpstream(t))), nil, "--discover",
		"--action-names")
	for _, name := range []string{"tools-call-with-logging", "tools-call-with-progress"} {
		if ok, out := scenario(t, "server", gw.url, name); !ok {
			t.Errorf("%s fails through the gateway:\n%s", name, out)
		}
	}
}

// TestMCPConformanceClient: the mcp backend passes the client scenarios a tool-calling client is held to, and with
// an Elicitor, elicitation-sep1034-client-defaults. The
// suite runs this test binary as its client (TestHelperConformanceClient), with the scenario's server URL last.
func TestMCPConformanceClient(t *testing.T) {
	t.Parallel()
	conformanceSuite(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"initialize", "tools_call", "sse-retry", "elicitation-sep1034-client-defaults"} {
		command := fmt.Sprintf("env MCP_CONFORMANCE_CLIENT=%s %s -test.run=^TestHelperConformanceClient$ --", name, self)
		if ok, out := scenario(t, "client", command, name); !ok {
			t.Errorf("%s fails:\n%s", name, out)
		}
	}
}

// TestHelperConformanceClient is the suite's client: it loads a manifest that discovers the tools of the server at
// the URL it is given and calls the one the scenario names.
func TestHelperConformanceClient(t *testing.T) {
	name := os.Getenv("MCP_CONFORMANCE_CLIENT")
	if name == "" {
		t.Skip("run by TestMCPConformanceClient")
	}
	url := os.Args[len(os.Args)-1]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tl, err := tool.Load(ctx, []byte(gatewayManifest(url)), tool.WithDiscovery(true))
	if err != nil {
		t.Fatal(err)
	}
	// The user accepts without filling in anything: the schema's defaults are the answer.
	accept := tool.ElicitorFunc(func(context.Context, tool.ElicitRequest) (tool.ElicitResult, error) {
		return tool.ElicitResult{Action: "accept"}, nil
	})
	task, err := tl.NewTask(ctx, tool.TaskConfig{Elicitor: accept})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = task.Close(ctx) }()
	call := map[string]struct {
		action string
		args   map[string]any
	}{"tools_call": {"add_numbers", map[string]any{"a": 2, "b": 3}}, "sse-retry": {"test_reconnection", nil},
		"elicitation-sep1034-client-defaults": {"test_client_elicitation_defaults", nil}}[name]
	if call.action == "" {
		return // initialize: the handshake is the scenario
	}
	res, err := task.Invoke(ctx, call.action, call.args)
	if err != nil || res.IsError {
		t.Fatalf("%s: %v %+v", call.action, err, res)
	}
}
