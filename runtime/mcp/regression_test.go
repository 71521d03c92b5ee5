package mcp_test

// Regression tests for the review of the mcp backend: bounds on connecting, ending at Close, bounds on Expand,
// parameters in server fields, HTTP statuses, action-level blocks on the shared server.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
)

// hangingHTTP is a server that accepts every request and never answers until the test ends.
func hangingHTTP(t *testing.T) string {
	u, _ := hangingHTTPArrived(t)
	return u
}

// hangingHTTPArrived is hangingHTTP that also tells when the first request arrived.
func hangingHTTPArrived(t *testing.T) (string, <-chan struct{}) {
	t.Helper()
	release, arrived := make(chan struct{}), make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(arrived) })
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.CloseClientConnections(); srv.Close() })
	return srv.URL, arrived
}

// hangingStdio is a stdio server block whose process writes its pid to the returned file and never answers; the
// process is killed at the end of the test if it still runs.
func hangingStdio(t *testing.T, indent string) (string, string) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pid")
	t.Cleanup(func() {
		if pid := readPID(pidFile); pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return indent + "transport: stdio\n" + indent + "command: /bin/sh\n" +
		indent + "args: [\"-c\", \"echo $$ > " + pidFile + "; exec sleep 60\"]\n", pidFile
}

func readPID(file string) int {
	b, _ := os.ReadFile(file)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// waitPID waits until file names a pid.
func waitPID(t *testing.T, file string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if pid := readPID(file); pid > 0 {
			return pid
		}
		time.Sleep(10 * time.Millisecond) // polling a file another process writes
	}
	t.Fatal("the server did not start")
	return 0
}

// waitGone fails unless pid has exited (or is a zombie) within d.
func waitGone(t *testing.T, pid int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for state := procState(pid); state != "" && state != "Z"; state = procState(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the server %d still runs (state %s)", pid, state)
		}
		time.Sleep(10 * time.Millisecond) // polling another process's state
	}
}

// invokeAsync runs one call and delivers its error.
func invokeAsync(task *tool.Task, action string, args map[string]any) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := task.Invoke(context.Background(), action, args)
		done <- err
	}()
	return done
}

// TestConnectHonoursTheServerTimeout: a server that accepts the connection but never answers ends the first call
// after the block's timeout, as an unrecoverable error (the server cannot be connected to).
func TestConnectHonoursTheServerTimeout(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"sse", "streamable_http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			u := hangingHTTP(t)
			task := newTask(t, load(t, manifest("  transport: "+transport+"\n  url: "+u+"/mcp\n  timeout: 300ms\n", "echo")))
			select {
			case err := <-invokeAsync(task, "echo", map[string]any{"text": "a"}):
				if !errors.Is(err, tool.ErrUnrecoverable) || !strings.Contains(err.Error(), "deadline") {
					t.Errorf("err = %v, want an unrecoverable error naming the deadline", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Invoke still blocked 5s after its 300ms timeout")
			}
		})
	}
}

// TestConnectEndsAtClose: Task.Close ends a first call that is still connecting (SSE stream, stdio handshake), and a
// stdio server whose handshake was cut short is gone when Close returns.
func TestConnectEndsAtClose(t *testing.T) {
	t.Parallel()
	var arrived <-chan struct{}
	sse := func(t *testing.T) (string, string) {
		var u string
		u, arrived = hangingHTTPArrived(t)
		return "  transport: sse\n  url: " + u + "/sse\n", ""
	}
	stdio := func(t *testing.T) (string, string) { return hangingStdio(t, "  ") }
	for name, server := range map[string]func(*testing.T) (string, string){"sse": sse, "stdio": stdio} {
		t.Run(name, func(t *testing.T) {
			block, pidFile := server(t)
			connecting := arrived
			tl := load(t, manifest(block, "echo"), tool.WithLimits(tool.Limits{TeardownTimeout: time.Second}))
			task, err := tl.NewTask(context.Background(), tool.TaskConfig{})
			if err != nil {
				t.Fatal(err)
			}
			done := invokeAsync(task, "echo", map[string]any{"text": "a"})
			pid := 0
			if pidFile != "" {
				pid = waitPID(t, pidFile)
			} else {
				<-connecting // the call is in the connect
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := task.Close(ctx); err != nil {
				t.Errorf("Close: %v", err)
			}
			select {
			case err := <-done:
				if err == nil {
					t.Error("the call succeeded")
				}
			case <-time.After(3 * time.Second):
				t.Fatal("Invoke still blocked 3s after Task.Close returned")
			}
			if pid > 0 {
				waitGone(t, pid, time.Second)
			}
		})
	}
}

// TestTeardownEndsABackgroundHandshake: a server of an action's own that hangs in its handshake, started after the
// task's first server, is killed by Teardown and its call ends.
func TestTeardownEndsABackgroundHandshake(t *testing.T) {
	t.Parallel()
	block, pidFile := hangingStdio(t, "        ")
	src := manifest(stdioServer(), "echo") + "  - name: hang\n    description: Hangs.\n    parameters:\n      properties: {}\n" +
		"    execute:\n      mcp:\n        tool_name: echo\n" + block
	tl := load(t, src, tool.WithLimits(tool.Limits{TeardownTimeout: 2 * time.Second}))
	task, err := tl.NewTask(context.Background(), tool.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := task.Invoke(context.Background(), "echo", map[string]any{"text": "a"}); err != nil || res.IsError {
		t.Fatalf("echo: %v %+v", err, res)
	}
	done := invokeAsync(task, "hang", nil)
	pid := waitPID(t, pidFile)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := task.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	waitGone(t, pid, time.Second)
	select {
	case err := <-done:
		if err == nil {
			t.Error("the hanging call succeeded")
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the call still runs 3s after Close")
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

// TestHTTPStatusIsRecoverable: a 503 or 429 answer to tools/call over streamable HTTP is a recoverable error of
// that call, not a lost connection, and the task goes on.
func TestHTTPStatusIsRecoverable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status int
		kind   string
	}{
		{http.StatusServiceUnavailable, "unavailable"},
		{http.StatusTooManyRequests, "rate_limited"},
		{http.StatusBadRequest, "invalid_request"},
	}
	for _, c := range cases {
		t.Run(strconv.Itoa(c.status), func(t *testing.T) {
			t.Parallel()
			u, _ := remoteServer(t, "-http")
			target, _ := url.Parse(u)
			proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: target.Scheme, Host: target.Host})
			var failing atomic.Bool
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost && failing.Load() {
					body, _ := io.ReadAll(r.Body)
					if bytes.Contains(body, []byte(`"tools/call"`)) {
						http.Error(w, "upstream busy", c.status)
						return
					}
					r.Body = io.NopCloser(bytes.NewReader(body))
				}
				proxy.ServeHTTP(w, r)
			}))
			t.Cleanup(front.Close)
			task := newTask(t, load(t, manifest("  transport: streamable_http\n  url: "+front.URL+target.Path+"\n", "echo")))
			call := func(text string) (*tool.Result, error) {
				return task.Invoke(context.Background(), "echo", map[string]any{"text": text})
			}
			if res, err := call("a"); err != nil || res.IsError {
				t.Fatalf("first call: %v %+v", err, res)
			}
			failing.Store(true)
			res, err := call("b")
			if err != nil {
				t.Fatalf("a %d ended the task: %v", c.status, err)
			}
			if !res.IsError || res.Error.Kind != c.kind || !strings.Contains(res.Error.Message, "upstream busy") {
				t.Errorf("result error %+v, want %s quoting the body", res.Error, c.kind)
			}
			failing.Store(false)
			if res, err := call("c"); err != nil || res.Output != "c" {
				t.Errorf("the call after: %v %+v", err, res)
			}
		})
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
