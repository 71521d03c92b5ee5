package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/internal/leakcheck"
	"github.com/commonagents-go/tool/runtime"
)

// TestTransports runs the same calls over every transport, each against the test server in its own process.
func TestTransports(t *testing.T) {
	t.Parallel()
	servers := map[string]func(t *testing.T) string{
		"stdio": func(*testing.T) string { return stdioServer() },
		"sse": func(t *testing.T) string {
			u, _ := remoteServer(t, "-sse")
			return "  transport: sse\n  url: " + u + "\n"
		},
		"streamable_http": func(t *testing.T) string {
			u, _ := remoteServer(t, "-http")
			return "  transport: streamable_http\n  url: " + u + "\n"
		},
	}
	calls := []struct {
		action  string
		args    map[string]any
		want    string // the output's JSON
		errKind string
		errText string
	}{
		{action: "echo", args: map[string]any{"text": "hello"}, want: `"hello"`},
		{action: "add", args: map[string]any{"a": 2, "b": 3.5}, want: `{"sum":5.5}`},
		{action: "fail", args: map[string]any{"message": "no such repository"}, errKind: "tool_error",
			errText: "no such repository"},
	}
	for name, server := range servers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			task := newTask(t, load(t, manifest(server(t), "echo", "add", "fail")))
			for _, c := range calls {
				res, err := task.Invoke(context.Background(), c.action, c.args)
				if err != nil {
					t.Fatalf("%s: %v", c.action, err)
				}
				if c.errKind != "" {
					if !res.IsError || res.Error.Kind != c.errKind || !strings.Contains(res.Error.Message, c.errText) {
						t.Errorf("%s: IsError %v, error %+v; want %s containing %q", c.action, res.IsError, res.Error,
							c.errKind, c.errText)
					}
					continue
				}
				if res.IsError || string(res.OutputJSON) != c.want {
					t.Errorf("%s: output %s (error %+v), want %s", c.action, res.OutputJSON, res.Error, c.want)
				}
			}
		})
	}
}

func TestStdioEnvironmentOnlyListed(t *testing.T) {
	t.Setenv("MCP_TEST_HOST_SECRET", "must-not-leak")
	src := strings.Replace(manifest(stdioServer(`LISTED: "{settings.value}"`), "env"),
		"mcp:\n", "settings:\n  properties:\n    value: {type: string}\nmcp:\n", 1)
	task := newTask(t, load(t, src, tool.WithSettings(map[string]any{"value": "from-settings"})))
	res, err := task.Invoke(context.Background(), "env",
		map[string]any{"names": []any{"LISTED", "MCP_TEST_HOST_SECRET", "PATH"}})
	if err != nil || res.IsError {
		t.Fatalf("env: %v %+v", err, res)
	}
	got := res.Output.(map[string]any)
	if got["LISTED"] != "from-settings" {
		t.Errorf("LISTED = %v, want the rendered setting", got["LISTED"])
	}
	if _, ok := got["MCP_TEST_HOST_SECRET"]; ok {
		t.Error("an unlisted host variable reached the server")
	}
	if _, ok := got["PATH"]; !ok {
		t.Error("PATH was not forwarded")
	}
}

// TestContentBlocksReachTheResult: a result's blocks reach Result.Content typed and in order, while Output keeps
// the text for text-only hosts.
func TestContentBlocksReachTheResult(t *testing.T) {
	t.Parallel()
	task := newTask(t, load(t, manifest(stdioServer(), "image")))
	res, err := task.Invoke(context.Background(), "image", nil)
	if err != nil || res.IsError {
		t.Fatalf("image: %v %+v", err, res)
	}
	if res.Output != "a dot" || res.Text() != "a dot" {
		t.Errorf("output = %v, text %q, want the text part", res.Output, res.Text())
	}
	want := []runtime.Content{{Type: runtime.ContentText, Text: "a dot"},
		{Type: runtime.ContentImage, Data: "iVBORw0KGgo=", MIMEType: "image/png"}}
	if !reflect.DeepEqual(res.Content, want) {
		t.Errorf("content = %+v, want %+v", res.Content, want)
	}
}

func TestCallTimeoutIsRecoverable(t *testing.T) {
	t.Parallel()
	// slow's own timeout (the first action's block); echo keeps the default.
	src := strings.Replace(manifest(stdioServer(), "slow", "echo"), "mcp: {}", "mcp: {timeout: 300ms}", 1)
	task := newTask(t, load(t, src))
	// echo first: the server process starts and shakes hands under echo's default bound, so that slow's 300 ms
	// bound only its call, however slowly a loaded machine starts the process.
	if res, err := task.Invoke(context.Background(), "echo", map[string]any{"text": "up"}); err != nil || res.Output != "up" {
		t.Fatalf("echo: %v %+v", err, res)
	}
	res, err := task.Invoke(context.Background(), "slow", map[string]any{"ms": 5000})
	if err != nil {
		t.Fatal(err)
	}
	// slow is not marked idempotent: the server may have run it, so sending it again is not advised.
	assertOutcomeUnknown(t, res, "timeout")
	// The server is still there for the next call.
	res, err = task.Invoke(context.Background(), "echo", map[string]any{"text": "still here"})
	if err != nil || res.Output != "still here" {
		t.Fatalf("echo after a timeout: %v %+v", err, res)
	}
}

// TestProgressBecomesFacts checks that progress notifications of a call become its tool.progress facts. Delivery
// is best effort: the backend drops notifications that arrive after the call returned, and neither mcp-go's
// stdio server (which writes notifications from a goroutine of their own) nor its HTTP client (which dispatches
// them concurrently) keeps them ordered with the result; the server pauses after each step to leave them time.
func TestProgressBecomesFacts(t *testing.T) {
	t.Parallel()
	u, _ := remoteServer(t, "-http")
	for name, server := range map[string]string{
		"stdio":           stdioServer(),
		"streamable_http": "  transport: streamable_http\n  url: " + u + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rec := &facts{}
			task := newTask(t, load(t, manifest(server, "progress"), tool.WithObserver(rec)))
			res, err := task.Invoke(context.Background(), "progress", map[string]any{"steps": 3, "delay_ms": 50})
			if err != nil || res.IsError || res.Output != "3 steps" {
				t.Fatalf("progress: %v %+v", err, res)
			}
			got := rec.named("tool.progress")
			if len(got) == 0 || len(got) > 3 {
				t.Fatalf("%d tool.progress facts, want 1 to 3: %+v", len(got), got)
			}
			last := 0
			for _, f := range got {
				step, _ := strconv.Atoi(fmt.Sprint(f.Data["progress"]))
				if f.Data["call_id"] != res.CallID || step <= last || step > 3 ||
					f.Data["message"] != fmt.Sprintf("step %d", step) || fmt.Sprint(f.Data["total"]) != "3" {
					t.Errorf("fact %+v, want call %s, a step after %d", f.Data, res.CallID, last)
				}
				last = step
			}
		})
	}
}

func TestServerCrash(t *testing.T) {
	t.Parallel()
	t.Run("retried once after a crash", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		starts := filepath.Join(dir, "starts")
		task := newTask(t, load(t, idempotent(manifest(stdioServer("MCPSERVER_STARTS: "+starts), "crash"), "crash")))
		res, err := task.Invoke(context.Background(), "crash", map[string]any{"once": filepath.Join(dir, "once")})
		if err != nil || res.IsError || res.Output != "survived" {
			t.Fatalf("crash once: %v %+v", err, res)
		}
		if res.Telemetry.Attempts != 2 {
			t.Errorf("attempts = %d, want 2", res.Telemetry.Attempts)
		}
		if n := len(lines(t, starts)); n != 2 {
			t.Errorf("the server started %d times, want 2", n)
		}
	})
	t.Run("not sent again when not idempotent", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		starts := filepath.Join(dir, "starts")
		task := newTask(t, load(t, manifest(stdioServer("MCPSERVER_STARTS: "+starts), "crash", "echo")))
		res, err := task.Invoke(context.Background(), "crash", map[string]any{"once": filepath.Join(dir, "once")})
		if err != nil {
			t.Fatalf("a crash mid-call ended the task: %v", err)
		}
		assertOutcomeUnknown(t, res, "unavailable")
		if n := len(lines(t, starts)); n != 1 {
			t.Errorf("the server started %d times, want 1: the call was sent again", n)
		}
		res, err = task.Invoke(context.Background(), "echo", map[string]any{"text": "next"})
		if err != nil || res.Output != "next" {
			t.Fatalf("the call after: %v %+v", err, res)
		}
		if n := len(lines(t, starts)); n != 2 {
			t.Errorf("the server started %d times, want 2 (restarted for the next call)", n)
		}
	})
	t.Run("unrecoverable when it crashes again", func(t *testing.T) {
		t.Parallel()
		task := newTask(t, load(t, idempotent(manifest(stdioServer(), "crash"), "crash")))
		_, err := task.Invoke(context.Background(), "crash", nil)
		if !errors.Is(err, tool.ErrUnrecoverable) {
			t.Fatalf("err = %v, want unrecoverable", err)
		}
		if !strings.Contains(err.Error(), "crashing on purpose") {
			t.Errorf("err = %v, want the server's stderr excerpt", err)
		}
	})
	t.Run("http server gone", func(t *testing.T) {
		t.Parallel()
		u, cmd := remoteServer(t, "-http")
		// No pooled connection: a request on a kept-alive connection to the killed server may count as sent (its
		// outcome unknown, a recoverable result) when the client has not yet seen that connection close; a new
		// connection is refused, which is what this case pins.
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		task := newTask(t, load(t, manifest("  transport: streamable_http\n  url: "+u+"\n", "echo"), tool.WithHTTPClient(client)))
		if res, err := task.Invoke(context.Background(), "echo", map[string]any{"text": "a"}); err != nil || res.IsError {
			t.Fatalf("first call: %v %+v", err, res)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_, err := task.Invoke(context.Background(), "echo", map[string]any{"text": "b"})
		if !errors.Is(err, tool.ErrUnrecoverable) {
			t.Fatalf("err = %v, want unrecoverable", err)
		}
	})
}

func TestStartFailureQuotesStderr(t *testing.T) {
	t.Parallel()
	task := newTask(t, load(t, manifest(stdioServer(`MCPSERVER_FAIL_START: "bad config: no token given"`), "echo")))
	_, err := task.Invoke(context.Background(), "echo", map[string]any{"text": "a"})
	if !errors.Is(err, tool.ErrUnrecoverable) || !strings.Contains(err.Error(), "bad config: no token given") {
		t.Fatalf("err = %v, want unrecoverable with the stderr excerpt", err)
	}
}

func TestTeardownEndsTheProcess(t *testing.T) {
	leakcheck.Check(t)
	task := newTask(t, load(t, manifest(stdioServer(), "pid")))
	res, err := task.Invoke(context.Background(), "pid", nil)
	if err != nil || res.IsError {
		t.Fatalf("pid: %v %+v", err, res)
	}
	pid, err := res.Output.(map[string]any)["pid"].(json.Number).Int64()
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(int(pid), 0); err != nil {
		t.Fatalf("the server %d is not running before Close: %v", pid, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := task.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(int(pid), 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the server %d still exists after Close (kill 0: %v)", pid, err)
	}
}

// TestTeardownKillsAStubbornGroup runs a server that ignores SIGTERM, outlives its input and has a child: Close
// ends both within the teardown bound.
func TestTeardownKillsAStubbornGroup(t *testing.T) {
	t.Parallel()
	childFile := filepath.Join(t.TempDir(), "child")
	tl := load(t, manifest(stdioServer("MCPSERVER_STUBBORN: "+childFile), "pid"),
		tool.WithLimits(tool.Limits{TeardownTimeout: 3 * time.Second}))
	task := newTask(t, tl)
	res, err := task.Invoke(context.Background(), "pid", nil)
	if err != nil || res.IsError {
		t.Fatalf("pid: %v %+v", err, res)
	}
	pid, _ := res.Output.(map[string]any)["pid"].(json.Number).Int64()
	child, err := strconv.Atoi(strings.Join(lines(t, childFile), ""))
	if err != nil {
		t.Fatalf("child pid: %v", err)
	}
	start := time.Now()
	if err := task.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Close took %v, over the 3s teardown bound", took)
	}
	if err := syscall.Kill(int(pid), 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the server %d still exists after Close (kill 0: %v)", pid, err)
	}
	// The child is not ours to reap, and SIGKILL lands asynchronously: wait (bounded) until it is gone or a
	// zombie; no channel can tell us when another process's process dies.
	deadline := time.Now().Add(2 * time.Second)
	for state := procState(child); state != "" && state != "Z"; state = procState(child) {
		if time.Now().After(deadline) {
			t.Fatalf("the server's child %d is in state %q 2s after Close, want gone", child, state)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// procState returns the state letter of pid from /proc ("" when it does not exist).
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2 : i+3]
	}
	return "?"
}

func TestOneServerPerTask(t *testing.T) {
	t.Parallel()
	starts := filepath.Join(t.TempDir(), "starts")
	src := manifest(stdioServer("MCPSERVER_STARTS: "+starts), "echo", "add") +
		"  - name: own\n    description: Has its own server.\n    parameters:\n      properties:\n" +
		"        text: {type: string}\n    execute:\n      mcp:\n        tool_name: echo\n        transport: stdio\n" +
		"        command: " + serverBin + "\n        env:\n          MCPSERVER_STARTS: " + starts + "\n"
	task := newTask(t, load(t, src))
	var wg sync.WaitGroup
	errs := make(chan error, 30)
	for n := range 10 {
		wg.Go(func() {
			for _, call := range []struct {
				action string
				args   map[string]any
			}{
				{"echo", map[string]any{"text": fmt.Sprint(n)}},
				{"add", map[string]any{"a": n, "b": 1}},
				{"own", map[string]any{"text": fmt.Sprint(n)}},
			} {
				res, err := task.Invoke(context.Background(), call.action, call.args)
				if err != nil || res.IsError {
					errs <- fmt.Errorf("%s: %v %+v", call.action, err, res)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// One process for the shared block, one for the action with its own server.
	if n := len(lines(t, starts)); n != 2 {
		t.Errorf("%d server processes started, want 2", n)
	}
}

// TestSecretNotInInvokeError: a secret handed to a server that echoes it on stderr does not reach the call's error
// (the task masks it). The same at Load is the loader's to mask.
func TestSecretNotInInvokeError(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-t0ken-value"
	srv := "  transport: stdio\n  command: " + serverBin + "\n  env:\n    MCPSERVER_FAIL_START: \"rejected token {settings.token}\"\n"
	src := strings.Replace(manifest(srv, "echo"), "description: The test MCP server.\n",
		"description: d\nsettings:\n  properties:\n    token: {type: string, format: password}\n", 1)
	task := newTask(t, load(t, src, tool.WithSettings(map[string]any{"token": secret})))
	_, err := task.Invoke(context.Background(), "echo", map[string]any{"text": "a"})
	if err == nil || !strings.Contains(err.Error(), "rejected token") {
		t.Fatalf("err = %v, want the start failure with the stderr excerpt", err)
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("the Invoke error holds the secret: %v", err)
	}
	if strings.Contains(err.Error(), "mcp: mcp:") || strings.Contains(err.Error(), "initialize mcp: mcp:") {
		t.Errorf("doubled prefix: %v", err)
	}
}

// TestActionLevelBlockOnTheSharedServer: an action-level block without a server of its own applies its timeout
// (and tool_name) on the shared server, and refuses server fields that would configure no server.
func TestActionLevelBlockOnTheSharedServer(t *testing.T) {
	t.Parallel()
	t.Run("timeout applies", func(t *testing.T) {
		t.Parallel()
		src := strings.Replace(manifest(stdioServer(), "slow", "echo"), "      mcp: {}\n", "      mcp: {timeout: 200ms}\n", 1)
		task := newTask(t, load(t, src))
		res, err := task.Invoke(context.Background(), "slow", map[string]any{"ms": 3000})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError || res.Error.Kind != "timeout" || !strings.Contains(res.Error.Message, "200ms") {
			t.Errorf("the action's timeout: 200ms was not applied: %s %+v", res.OutputJSON, res.Error)
		}
		// The other action keeps the server's (default) bound.
		if res, err := task.Invoke(context.Background(), "echo", map[string]any{"text": "x"}); err != nil || res.Output != "x" {
			t.Errorf("echo: %v %+v", err, res)
		}
	})
	for _, f := range []string{`args: ["x"]`, `env: {A: b}`, `headers: {A: b}`} {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			src := strings.Replace(manifest(stdioServer(), "echo"), "      mcp: {}\n", "      mcp: {"+f+"}\n", 1)
			_, err := tool.Load(context.Background(), []byte(src))
			name := f[:strings.Index(f, ":")]
			if err == nil || !strings.Contains(err.Error(), "execute.mcp."+name) {
				t.Errorf("Load: %v, want a problem at execute.mcp.%s", err, name)
			}
		})
	}
}

// TestParametersInServerFields: the stdio command never takes parameters; args, env, url and headers take only
// parameters with require_binding, whose bound value then reaches the server.
func TestParametersInServerFields(t *testing.T) {
	t.Parallel()
	head := "kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: mcptest\ndescription: d\n" +
		"actions:\n  - name: env\n    description: d\n    parameters:\n      properties:\n" +
		"        names: {type: array, items: {type: string}}\n        who: {type: string%s}\n" +
		"    execute:\n      mcp:\n"
	cases := []struct {
		name    string
		bound   bool
		block   string
		problem string // "" when it loads
	}{
		{"command", true, "        transport: stdio\n        command: \"{parameters.who}\"\n", "execute.mcp.command"},
		{"args unbound", false, "        transport: stdio\n        command: " + serverBin + "\n        args: [\"{parameters.who}\"]\n", "execute.mcp.args[0]"},
		{"env unbound", false, "        transport: stdio\n        command: " + serverBin + "\n        env: {WHO: \"{parameters.who}\"}\n", "execute.mcp.env"},
		{"url unbound", false, "        transport: sse\n        url: \"http://127.0.0.1:1/{parameters.who}\"\n", "execute.mcp.url"},
		{"headers unbound", false, "        transport: sse\n        url: http://127.0.0.1:1/sse\n        headers: {X-Who: \"{parameters.who}\"}\n", "execute.mcp.headers"},
		{"env bound", true, "        transport: stdio\n        command: " + serverBin + "\n        env: {WHO: \"{parameters.who}\"}\n", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			extra := ""
			if c.bound {
				extra = ", require_binding: true"
			}
			src := strings.Replace(head, "%s", extra, 1) + c.block
			tl, err := tool.Load(context.Background(), []byte(src))
			if c.problem != "" {
				if err == nil || !strings.Contains(err.Error(), c.problem) {
					t.Fatalf("Load: %v, want a problem at %s", err, c.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			task, err := tl.NewTask(context.Background(), tool.TaskConfig{Capability: tool.Capability{
				Bindings: map[string]any{"who": "bound-value"}}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = task.Close(context.Background()) })
			res, err := task.Invoke(context.Background(), "env", map[string]any{"names": []any{"WHO"}})
			if err != nil || res.IsError || !strings.Contains(string(res.OutputJSON), "bound-value") {
				t.Errorf("env: %v %s %+v", err, res.OutputJSON, res.Error)
			}
		})
	}
}
