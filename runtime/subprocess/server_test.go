package subprocess_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/runtime"
)

// serverAction is one server-mode action running rpcserver with extra args; calls to it may run in parallel.
func serverAction(timeoutMS int, args ...string) string {
	quoted, _ := json.Marshal(append([]string{}, args...))
	return fmt.Sprintf(`  - name: work
    description: talks to a long-lived JSON-RPC server
    parameters:
      properties:
        op: {type: string}
        token: {type: string, default: ""}
        ms: {type: integer, default: 0}
        "n": {type: integer, default: 0}
        bytes: {type: integer, default: 0}
        message: {type: string, default: ""}
        text: {type: string, default: ""}
    annotations: {read_only: true, concurrency_safe: true}
    execute:
      exec: {command: %q, args: %s, runtime: server, timeout_ms: %d}
`, prog("rpcserver"), quoted, timeoutMS)
}

// serverPID asks the server its pid.
func serverPID(t *testing.T, task *tool.Task) int {
	t.Helper()
	res := invoke(t, task, "work", map[string]any{"op": "pid"})
	if res.IsError {
		t.Fatalf("pid: %v", res.Error)
	}
	n, err := res.Output.(map[string]any)["pid"].(json.Number).Int64()
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

func TestServerResults(t *testing.T) {
	task := newTask(t, load(t, serverAction(10000), tool.WithLimits(tool.Limits{ResponseBytes: 4 << 20})))
	tests := []struct {
		name       string
		args       map[string]any
		wantOutput string
		kind       string
		parts      []string
		stderr     string
	}{
		{name: "result", args: map[string]any{"op": "echo", "token": "t1"},
			wantOutput: `{"bytes":0,"message":"","ms":0,"n":0,"op":"echo","text":"","token":"t1"}`},
		{name: "JSON-RPC error", args: map[string]any{"op": "error", "message": "no such table"},
			kind: runtime.KindToolError, parts: []string{"no such table"}},
		{name: "noise and stray replies are skipped", args: map[string]any{"op": "noise"}, wantOutput: `"ok"`},
		{name: "stderr of the call", args: map[string]any{"op": "stderr", "text": "warming up\n"},
			wantOutput: `"ok"`, stderr: "warming up\n"},
		{name: "reply over the limit", args: map[string]any{"op": "big", "bytes": 5 << 20},
			kind: runtime.KindResultTooLarge},
		{name: "usable after a reply over the limit", args: map[string]any{"op": "echo", "token": "t2"},
			wantOutput: `{"bytes":0,"message":"","ms":0,"n":0,"op":"echo","text":"","token":"t2"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := invoke(t, task, "work", tc.args)
			if tc.kind != "" {
				wantError(t, res, tc.kind, tc.parts...)
			} else if res.IsError || string(res.OutputJSON) != tc.wantOutput {
				t.Errorf("output %s (error %v), want %s", res.OutputJSON, res.Error, tc.wantOutput)
			}
			if got, _ := res.ServerData["stderr"].(string); got != tc.stderr {
				t.Errorf("ServerData stderr %q, want %q", got, tc.stderr)
			}
		})
	}
}

// A reply line of several MiB is read whole.
func TestServerLongLine(t *testing.T) {
	task := newTask(t, load(t, serverAction(10000)))
	const n = 3 << 20
	res := invoke(t, task, "work", map[string]any{"op": "big", "bytes": n})
	if s, _ := res.Output.(string); res.IsError || len(s) != n {
		t.Errorf("output of %d bytes (error %v), want %d", len(s), res.Error, n)
	}
}

// Calls in flight together each get their own reply, though the server answers them in reverse order, and all
// go to one process.
func TestServerConcurrentCalls(t *testing.T) {
	task := newTask(t, load(t, serverAction(10000)))
	pid := serverPID(t, task)
	const n = 6
	var wg sync.WaitGroup
	got := make([]*tool.Result, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			// The server holds every barrier request until n arrived: this only ends if the calls overlap.
			got[i], errs[i] = task.Invoke(context.Background(), "work",
				map[string]any{"op": "barrier", "n": n, "token": fmt.Sprint("call-", i)})
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		want := fmt.Sprintf(`{"token":"call-%d"}`, i)
		if string(got[i].OutputJSON) != want {
			t.Errorf("call %d got %s (error %v), want %s", i, got[i].OutputJSON, got[i].Error, want)
		}
	}
	if again := serverPID(t, task); again != pid {
		t.Errorf("the calls ran in process %d, then %d: want one process per task", pid, again)
	}
}

// A call that times out gets a timeout; its late reply, arriving while another call waits, is dropped and the
// other call gets its own.
func TestServerTimeoutDropsLateReply(t *testing.T) {
	parallel(t)
	task := newTask(t, load(t, serverAction(1000)))
	res := invoke(t, task, "work", map[string]any{"op": "sleep", "ms": 1300, "token": "late"})
	wantError(t, res, runtime.KindTimeout, "did not reply", "outcome is unknown")
	if !res.Error.OutcomeUnknown || !res.Error.Retryable { // work is annotated read-only: sending again is safe
		t.Errorf("error %+v: want the outcome unknown, retryable for a read-only action", res.Error)
	}
	res = invoke(t, task, "work", map[string]any{"op": "sleep", "ms": 600, "token": "mine"})
	if string(res.OutputJSON) != `{"token":"mine"}` {
		t.Errorf("output %s (error %v), want its own token", res.OutputJSON, res.Error)
	}
}

// The first death of the server is a recoverable error and the next call restarts it; the second ends the task.
func TestServerCrashRestartsOnceThenUnrecoverable(t *testing.T) {
	facts := &recorder{}
	task := newTask(t, load(t, serverAction(10000), tool.WithObserver(facts)))
	first := serverPID(t, task)

	res := invoke(t, task, "work", map[string]any{"op": "crash"})
	wantError(t, res, runtime.KindUnavailable, "exit status 3", "crashing on purpose", "outcome is unknown")
	if !res.Error.OutcomeUnknown || !res.Error.Retryable {
		t.Errorf("error %+v: the call was in flight, so its outcome is unknown (retryable: read-only)", res.Error)
	}
	waitGone(t, first)

	second := serverPID(t, task)
	if second == first {
		t.Fatalf("the server was not restarted (pid %d)", first)
	}
	_, err := task.Invoke(context.Background(), "work", map[string]any{"op": "crash"})
	if !isUnrecoverable(err) {
		t.Fatalf("second crash: %v, want an unrecoverable error", err)
	}
	if !strings.Contains(err.Error(), "again") {
		t.Errorf("error %q does not say the server exited again", err)
	}
	waitGone(t, second)
	if _, err := task.Invoke(context.Background(), "work", map[string]any{"op": "pid"}); !isUnrecoverable(err) {
		t.Errorf("a call after the second crash: %v, want an unrecoverable error", err)
	}
	if got, want := facts.names("exec.server."), "started(false) exited started(true) exited"; got != want {
		t.Errorf("server facts %q, want %q", got, want)
	}
}

// recorder is an Observer keeping the facts it sees.
type recorder struct {
	mu    sync.Mutex
	facts []tool.Fact
}

func (r *recorder) Observe(_ context.Context, f tool.Fact) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.facts = append(r.facts, f)
}

// find returns the last fact named name, or nil.
func (r *recorder) find(name string) *tool.Fact {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.facts) - 1; i >= 0; i-- {
		if r.facts[i].Name == name {
			f := r.facts[i]
			return &f
		}
	}
	return nil
}

// names lists the facts whose name starts with prefix, without it, with the restart flag of started facts.
func (r *recorder) names(prefix string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, f := range r.facts {
		name, ok := strings.CutPrefix(f.Name, prefix)
		if !ok {
			continue
		}
		if name == "started" {
			name = fmt.Sprintf("started(%v)", f.Data["restart"])
		}
		out = append(out, name)
	}
	return strings.Join(out, " ")
}

// Close ends the server: at once when it exits at the end of stdin, after the grace period by a kill when it
// does not. Either way the process is reaped and no goroutine remains (newTask's leak check).
func TestServerTeardown(t *testing.T) {
	parallel(t)
	for _, tc := range []struct {
		name   string
		args   []string
		status string // of the exited fact
	}{
		{"exits on end of input", nil, "exit status 0"},
		{"ignores end of input", []string{"-ignore-eof"}, "signal: killed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			facts := &recorder{}
			tl := load(t, serverAction(10000, tc.args...), tool.WithObserver(facts),
				tool.WithLimits(tool.Limits{TeardownTimeout: 2e9}))
			task := newTask(t, tl)
			pid := serverPID(t, task)
			if err := task.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			waitGone(t, pid)
			exited := facts.find("exec.server.exited")
			if exited == nil {
				t.Fatal("no exec.server.exited fact")
			}
			if exited.Data["status"] != tc.status || exited.Data["torn_down"] != true {
				t.Errorf("exited fact %v, want status %q, torn down", exited.Data, tc.status)
			}
		})
	}
}

// The server starts with the task's first call (Initialize); a program that cannot start ends the task.
func TestServerStartFailureIsUnrecoverable(t *testing.T) {
	task := newTask(t, load(t, `  - name: work
    description: d
    execute:
      exec: {command: "/nonexistent/exec-test-server", runtime: server}
`))
	_, err := task.Invoke(context.Background(), "work", nil)
	if !isUnrecoverable(err) {
		t.Errorf("invoke: %v, want an unrecoverable error", err)
	}
}
