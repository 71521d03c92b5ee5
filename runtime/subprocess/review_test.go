package subprocess_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/runtime"
)

// Regression tests of review findings: how replies are read, wedged servers, a recoverable failure at a server's
// first start, and what messages may quote.

func rawoutAction(env ...string) string {
	envYAML := "[]"
	if len(env) > 0 {
		envYAML = "[" + strings.Join(env, ", ") + "]"
	}
	return fmt.Sprintf(`  - name: raw
    description: writes args.stdout and args.stderr verbatim, exits with args.exit
    parameters:
      properties:
        stdout: {type: string}
        stderr: {type: string, default: ""}
        exit: {type: integer, default: 0}
    execute:
      exec: {command: %q, env: %s}
`, prog("rawout"), envYAML)
}

// The oneshot envelope: a key whose value is null is absent, and pending is decided by the key the program used,
// not by the shape of the output.
func TestOneshotEnvelope(t *testing.T) {
	task := newTask(t, load(t, rawoutAction()))
	tests := []struct {
		name, stdout string
		wantOutput   string // when the call succeeds
		kind         string // else the error's kind
		parts        []string
		pending      bool
	}{
		{name: "null error with a result", stdout: `{"result": 42, "error": null}`, wantOutput: `42`},
		{name: "null pending with a result", stdout: `{"result": "done", "pending": null}`, wantOutput: `"done"`},
		{name: "a result shaped like pending", stdout: `{"result": {"pending": 3}}`, wantOutput: `{"pending":3}`},
		{name: "pending", stdout: `{"pending": {"reason": "approval_required"}, "error": null}`,
			wantOutput: `{"pending":{"reason":"approval_required"}}`, pending: true},
		{name: "error beside a result", stdout: `{"result": 1, "error": "quota exceeded"}`,
			kind: runtime.KindToolError, parts: []string{"quota exceeded"}},
		{name: "only null keys", stdout: `{"error": null, "pending": null}`,
			kind: runtime.KindMalformedResponse, parts: []string{`without "result"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := invoke(t, task, "raw", map[string]any{"stdout": tc.stdout})
			if tc.kind != "" {
				wantError(t, res, tc.kind, tc.parts...)
			} else if res.IsError {
				t.Fatalf("%s: error %s: %s", tc.stdout, res.Error.Kind, res.Error.Message)
			} else if string(res.OutputJSON) != tc.wantOutput {
				t.Errorf("output %s, want %s", res.OutputJSON, tc.wantOutput)
			}
			if got := res.ServerData["status"] == "pending"; got != tc.pending {
				t.Errorf("ServerData status %v, want pending=%v", res.ServerData["status"], tc.pending)
			}
		})
	}
}

// Stdout of exactly the limit is accepted and one byte more is too large, every time: a program that writes too
// much and exits at once must not win a race against the size check.
func TestOneshotLimitIsExact(t *testing.T) {
	parallel(t)
	const limit = 200
	task := newTask(t, load(t, rawoutAction(), tool.WithLimits(tool.Limits{ResponseBytes: limit})))
	reply := func(n int) string { // a valid JSON object of n bytes
		return `{"result":"` + strings.Repeat("x", n-len(`{"result":""}`)) + `"}`
	}
	res := invoke(t, task, "raw", map[string]any{"stdout": reply(limit)})
	if res.IsError {
		t.Errorf("stdout of exactly %d bytes: %s: %s", limit, res.Error.Kind, res.Error.Message)
	}
	for range 20 {
		res := invoke(t, task, "raw", map[string]any{"stdout": reply(limit + 1)})
		wantError(t, res, runtime.KindResultTooLarge)
	}
}

// The values of forwarded variables are masked in the stderr line a message quotes.
func TestOneshotMessageMasksForwardedValues(t *testing.T) {
	const secret = "s3cr3t-exec-test-value"
	t.Setenv("EXEC_TEST_SECRET", secret)
	task := newTask(t, load(t, rawoutAction("EXEC_TEST_SECRET")))
	res := invoke(t, task, "raw", map[string]any{"stdout": "", "stderr": "login failed with token " + secret + "\n",
		"exit": 1})
	wantError(t, res, runtime.KindToolError, "login failed with token [redacted]")
	if strings.Contains(res.Error.Message, secret) {
		t.Errorf("message %q holds the forwarded variable's value", res.Error.Message)
	}
}

// A relative command is taken from dir.
func TestOneshotRelativeCommandUsesDir(t *testing.T) {
	task := newTask(t, load(t, fmt.Sprintf(`  - name: rel
    description: a program named relative to dir
    execute:
      exec: {command: ./printenv, dir: %q}
`, bin)))
	res := invoke(t, task, "rel", nil)
	if res.IsError {
		t.Fatalf("%s: %s", res.Error.Kind, res.Error.Message)
	}
}

func rawserverAction(timeoutMS int) string {
	return fmt.Sprintf(`  - name: rs
    description: replies with args.reply
    parameters:
      properties:
        reply: {type: string}
        pad_to: {type: integer, default: 0}
    execute:
      exec: {command: %q, runtime: server, timeout_ms: %d}
`, prog("rawserver"), timeoutMS)
}

// A reply with the call's id is that call's answer however it is malformed: never dropped as noise, which would
// leave the call waiting for its timeout.
func TestServerMalformedReplies(t *testing.T) {
	task := newTask(t, load(t, rawserverAction(5000)))
	tests := []struct {
		name, reply string
		wantOutput  string // when the call succeeds
		kind        string // else the error's kind
		parts       []string
	}{
		{name: "error as a string", reply: `{"jsonrpc":"2.0","id":$ID,"error":"database is down"}`,
			kind: runtime.KindToolError, parts: []string{"database is down"}},
		{name: "error message not a string",
			reply: `{"jsonrpc":"2.0","id":$ID,"error":{"code":-32000,"message":{"text":"database is down"}}}`,
			kind:  runtime.KindToolError, parts: []string{"database is down"}},
		{name: "error without message", reply: `{"jsonrpc":"2.0","id":$ID,"error":{"code":-32000}}`,
			kind: runtime.KindToolError, parts: []string{"reported an error"}},
		{name: "not JSON", reply: `{"jsonrpc":"2.0","id":$ID,"result":1,"extra":` + "\x01" + `}`,
			kind: runtime.KindMalformedResponse, parts: []string{"not valid JSON"}},
		{name: "string id, null error", reply: `{"jsonrpc":"2.0","id":"$ID","result":7,"error":null}`, wantOutput: `7`},
		{name: "neither result nor error", reply: `{"jsonrpc":"2.0","id":$ID}`,
			kind: runtime.KindMalformedResponse, parts: []string{"neither"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := invoke(t, task, "rs", map[string]any{"reply": tc.reply})
			if tc.kind != "" {
				wantError(t, res, tc.kind, tc.parts...)
			} else if res.IsError {
				t.Fatalf("error %s: %s", res.Error.Kind, res.Error.Message)
			} else if string(res.OutputJSON) != tc.wantOutput {
				t.Errorf("output %s, want %s", res.OutputJSON, tc.wantOutput)
			}
		})
	}
}

// A reply line of exactly ResponseBytes (its newline not counted) is accepted; one byte more is too large.
func TestServerLineLimitIsExact(t *testing.T) {
	const limit = 1000
	task := newTask(t, load(t, rawserverAction(5000), tool.WithLimits(tool.Limits{ResponseBytes: limit})))
	for _, tc := range []struct {
		padTo   int
		tooLong bool
	}{{limit, false}, {limit + 1, true}} {
		res := invoke(t, task, "rs", map[string]any{"reply": `{"jsonrpc":"2.0","id":$ID,"result":"$PAD"}`, "pad_to": tc.padTo})
		if tc.tooLong {
			wantError(t, res, runtime.KindResultTooLarge)
		} else if res.IsError {
			t.Errorf("a reply line of exactly %d bytes: %s: %s", limit, res.Error.Kind, res.Error.Message)
		}
	}
}

// A server that reads its requests and never answers is killed after two timeouts in a row and restarted for the
// next call; wedged again, it is killed again and the task is over.
func TestServerWedgedIsKilled(t *testing.T) {
	parallel(t)
	facts := &recorder{}
	task := newTask(t, load(t, fmt.Sprintf(`  - name: wedged
    description: reads requests, never answers
    execute:
      exec: {command: %q, runtime: server, timeout_ms: 200}
`, prog("hang")), tool.WithObserver(facts), tool.WithLimits(tool.Limits{TeardownTimeout: 2e9})))
	for n, killed := range []bool{false, true, false, true} {
		res := invoke(t, task, "wedged", nil)
		wantError(t, res, runtime.KindTimeout, "did not reply")
		if got := strings.Contains(res.Error.Message, "killed"); got != killed {
			t.Errorf("call %d: message %q, want killed=%v", n+1, res.Error.Message, killed)
		}
	}
	if got, want := facts.names("exec.server."), "started(false) exited started(true) exited"; got != want {
		t.Errorf("server facts %q, want %q", got, want)
	}
	_, err := task.Invoke(context.Background(), "wedged", nil)
	if !isUnrecoverable(err) || !strings.Contains(err.Error(), "stopped answering") {
		t.Errorf("a call after the second kill: %v, want an unrecoverable error saying the server stopped answering", err)
	}
}

// Two timeouts with a (late) reply in between do not kill the server: it is slow, not wedged.
func TestServerSlowIsNotKilled(t *testing.T) {
	parallel(t)
	task := newTask(t, load(t, serverAction(1000)))
	pid := serverPID(t, task)
	// The first reply comes 300ms after its timeout, while the second call waits for its own, which never comes
	// in time.
	wantError(t, invoke(t, task, "work", map[string]any{"op": "sleep", "ms": 1300}), runtime.KindTimeout)
	res := invoke(t, task, "work", map[string]any{"op": "sleep", "ms": 5000})
	wantError(t, res, runtime.KindTimeout)
	if strings.Contains(res.Error.Message, "killed") {
		t.Errorf("message %q: a server that replied between the timeouts was killed", res.Error.Message)
	}
	if again := serverPID(t, task); again != pid {
		t.Errorf("the server was replaced (pid %d, then %d)", pid, again)
	}
}

// flakyAuth fails while failing is set.
type flakyAuth struct{ failing *atomic.Bool }

func (f flakyAuth) Token(context.Context, string, tool.AuthRequest) (string, error) {
	if f.failing.Load() {
		return "", errors.New("token service briefly unavailable")
	}
	return "tok-123456", nil
}

// A recoverable failure rendering the command line at the server's first start (a token briefly unavailable)
// fails that call only: the task goes on, its other actions work, and the next call starts the server.
func TestServerFirstStartRecoverable(t *testing.T) {
	failing := &atomic.Bool{}
	failing.Store(true)
	task := newTask(t, load(t, fmt.Sprintf(`  - name: work
    description: server with a token on its command line
    parameters:
      properties:
        op: {type: string}
    execute:
      exec: {command: %q, args: ["-token={auth.svc()}"], runtime: server}
  - name: echo
    description: oneshot, no auth
    execute:
      exec: {command: %q}
`, prog("rpcserver"), prog("echo")), tool.WithAuth(flakyAuth{failing})))
	res, err := task.Invoke(context.Background(), "work", map[string]any{"op": "pid"})
	if err != nil {
		t.Fatalf("a transient token failure at the server's first start: %v, want a recoverable result", err)
	}
	if !res.IsError {
		t.Fatalf("output %s, want the token failure", res.OutputJSON)
	}
	if _, err := task.Invoke(context.Background(), "echo", nil); err != nil {
		t.Errorf("an unrelated oneshot action afterwards: %v", err)
	}
	failing.Store(false)
	res = invoke(t, task, "work", map[string]any{"op": "pid"})
	if res.IsError {
		t.Errorf("once the token is there: %s: %s", res.Error.Kind, res.Error.Message)
	}
}
