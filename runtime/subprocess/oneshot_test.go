package subprocess_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/runtime"
)

func oneshotActions() string {
	return fmt.Sprintf(`  - name: echo
    description: returns its arguments
    parameters:
      properties:
        text: {type: string}
        count: {type: integer, default: 2}
    execute:
      exec: {command: %q}
  - name: fail
    description: fails as asked
    parameters:
      properties:
        mode: {type: string}
        message: {type: string, default: ""}
    execute:
      exec: {command: %q}
  - name: pending
    description: awaits approval
    execute:
      exec: {command: %q}
  - name: crash
    description: dies by a signal
    execute:
      exec: {command: %q}
  - name: huge
    description: answers with many bytes on one line
    parameters:
      properties:
        bytes: {type: integer}
    execute:
      exec: {command: %q}
`, prog("echo"), prog("fail"), prog("pending"), prog("crash"), prog("hugeout"))
}

func TestOneshotResults(t *testing.T) {
	parallel(t)
	tl := load(t, oneshotActions(), tool.WithLimits(tool.Limits{ResponseBytes: 1 << 20}))
	task := newTask(t, tl)
	tests := []struct {
		name, action string
		args         map[string]any
		// wantOutput is the output's JSON when the call succeeds; else kind and parts describe the error.
		wantOutput  string
		kind        string
		parts       []string
		notInMsg    string
		stderr      string // ServerData["stderr"] contains it
		exitCode    int
		checkStatus bool
	}{
		{name: "result", action: "echo", args: map[string]any{"text": "héllo \"world\"\n"},
			wantOutput: `{"count":2,"text":"héllo \"world\"\n"}`},
		{name: "error", action: "fail", args: map[string]any{"mode": "json", "message": "model not loaded"},
			kind: runtime.KindToolError, parts: []string{"model not loaded"}},
		{name: "pending", action: "pending",
			wantOutput:  `{"pending":{"message":"waiting for a human to approve","reason":"approval_required"}}`,
			checkStatus: true},
		{name: "stdout not JSON", action: "fail", args: map[string]any{"mode": "text"},
			kind: runtime.KindMalformedResponse, parts: []string{"not JSON", "fail: wrote text"}, stderr: "fail: wrote text"},
		{name: "empty stdout", action: "fail", args: map[string]any{"mode": "empty"},
			kind: runtime.KindMalformedResponse, parts: []string{"nothing", "fail: wrote nothing"}},
		{name: "no known key", action: "fail", args: map[string]any{"mode": "nokey"},
			kind: runtime.KindMalformedResponse, parts: []string{`"result"`}},
		{name: "non-zero exit", action: "fail", args: map[string]any{"mode": "exit"},
			kind: runtime.KindToolError, parts: []string{"exit status 3", "fatal: disk on fire"}, notInMsg: "starting",
			stderr: "fail: starting\nfatal: disk on fire\n", exitCode: 3},
		{name: "non-zero exit with an error object", action: "fail", args: map[string]any{"mode": "exit_json", "message": "x"},
			kind: runtime.KindToolError, parts: []string{"bad input: x"}, exitCode: 1},
		{name: "killed by a signal", action: "crash",
			kind: runtime.KindToolError, parts: []string{"signal: killed", "crash: giving up"}, exitCode: -1},
		{name: "too large", action: "huge", args: map[string]any{"bytes": 2 << 20},
			kind: runtime.KindResultTooLarge, parts: []string{"1048576"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := invoke(t, task, tc.action, tc.args)
			if tc.kind == "" {
				if res.IsError {
					t.Fatalf("unexpected error %v", res.Error)
				}
				if string(res.OutputJSON) != tc.wantOutput {
					t.Errorf("output %s, want %s", res.OutputJSON, tc.wantOutput)
				}
			} else {
				wantError(t, res, tc.kind, tc.parts...)
				if tc.notInMsg != "" && strings.Contains(res.Error.Message, tc.notInMsg) {
					t.Errorf("message %q holds more of stderr than its last line", res.Error.Message)
				}
			}
			if got, _ := res.ServerData["stderr"].(string); !strings.Contains(got, tc.stderr) {
				t.Errorf("ServerData stderr %q lacks %q", got, tc.stderr)
			}
			if tc.exitCode != 0 && res.ServerData["exit_code"] != tc.exitCode {
				t.Errorf("ServerData exit_code %v, want %d", res.ServerData["exit_code"], tc.exitCode)
			}
			if got := res.ServerData["status"] == "pending"; got != tc.checkStatus {
				t.Errorf("ServerData status %v, want pending=%v", res.ServerData["status"], tc.checkStatus)
			}
		})
	}
}

// A oneshot reply far longer than any buffer is read whole: no line-length limit below the response limit.
func TestOneshotLongLine(t *testing.T) {
	task := newTask(t, load(t, oneshotActions()))
	const n = 3 << 20
	res := invoke(t, task, "huge", map[string]any{"bytes": n})
	if res.IsError {
		t.Fatal(res.Error)
	}
	if s, _ := res.Output.(string); len(s) != n || strings.Trim(s, "x") != "" {
		t.Errorf("output of %d bytes, want %d x's", len(s), n)
	}
}

func TestOneshotEnvironmentAndDir(t *testing.T) {
	t.Setenv("EXEC_TEST_FORWARDED", "first")
	t.Setenv("EXEC_TEST_NOT_LISTED", "must not leak")
	dir := t.TempDir()
	tl := load(t, fmt.Sprintf(`  - name: env
    description: prints its environment
    execute:
      exec:
        command: %q
        env: [EXEC_TEST_FORWARDED, EXEC_TEST_NEVER_SET]
        dir: %q
`, prog("printenv"), dir))
	task := newTask(t, tl)
	for _, value := range []string{"first", "second"} { // read from the host at each call
		t.Setenv("EXEC_TEST_FORWARDED", value)
		res := invoke(t, task, "env", nil)
		if res.IsError {
			t.Fatal(res.Error)
		}
		out := res.Output.(map[string]any)
		env := out["env"].(map[string]any)
		if env["EXEC_TEST_FORWARDED"] != value {
			t.Errorf("EXEC_TEST_FORWARDED = %v, want %q", env["EXEC_TEST_FORWARDED"], value)
		}
		for name := range env {
			switch name {
			case "EXEC_TEST_FORWARDED", "PATH", "HOME":
			default:
				t.Errorf("the child has %s=%v, which is neither listed nor PATH or HOME", name, env[name])
			}
		}
		if _, ok := env["PATH"]; !ok && os.Getenv("PATH") != "" {
			t.Error("PATH is not forwarded")
		}
		wantDir, _ := filepath.EvalSymlinks(dir)
		if gotDir, _ := filepath.EvalSymlinks(out["cwd"].(string)); gotDir != wantDir {
			t.Errorf("working directory %q, want %q", gotDir, wantDir)
		}
	}
}

// hangActions run programs that never answer: hang, and spawnhang, whose child (a grandchild of the task)
// keeps the stdout pipe open.
func hangActions(timeoutMS int) string {
	return fmt.Sprintf(`  - name: hang
    description: never answers
    execute:
      exec: {command: %q, timeout_ms: %d}
  - name: spawn
    description: starts a child and never answers
    parameters:
      properties:
        pidfile: {type: string}
    execute:
      exec: {command: %q, timeout_ms: %d}
`, prog("hang"), timeoutMS, prog("spawnhang"), timeoutMS)
}

// pids reads "PID CHILDPID" written by spawnhang.
func pids(t *testing.T, file string) []int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("spawnhang wrote no pid file: %v", err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	if len(out) != 2 {
		t.Fatalf("pid file %q", b)
	}
	return out
}

// The timeout covers starting the program (the test binary, run under its name), which on a loaded machine under
// -race can take a good part of a second: it is 2s, and the two calls run side by side, each in a task of its own
// (a task runs calls that are not read-only one at a time).
func TestOneshotTimeoutKillsProcessGroup(t *testing.T) {
	parallel(t)
	tl := load(t, hangActions(2000))
	t.Run("hang", func(t *testing.T) {
		t.Parallel()
		res := invoke(t, newTask(t, tl), "hang", nil)
		wantError(t, res, runtime.KindTimeout, "2s", "hang: sleeping")
		// The program ran and may have acted; hang is not marked idempotent.
		if res.Error.Retryable || !res.Error.OutcomeUnknown {
			t.Errorf("error %+v, want the outcome unknown and not retryable", res.Error)
		}
	})
	t.Run("spawn", func(t *testing.T) {
		t.Parallel()
		pidfile := filepath.Join(t.TempDir(), "pids")
		res := invoke(t, newTask(t, tl), "spawn", map[string]any{"pidfile": pidfile})
		wantError(t, res, runtime.KindTimeout)
		waitGone(t, pids(t, pidfile)...) // the program and its child
	})
}

func TestOneshotCancelKillsProcessGroup(t *testing.T) {
	parallel(t)
	task := newTask(t, load(t, hangActions(60000)))
	pidfile := filepath.Join(t.TempDir(), "pids")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // cancelled once the program and its child run, however long they take to start
		if waitFile(ctx, pidfile) {
			cancel()
		}
	}()
	res, err := task.Invoke(ctx, "spawn", map[string]any{"pidfile": pidfile})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("invoke with a cancelled context: %v, %+v", err, res)
	}
	waitGone(t, pids(t, pidfile)...)
}

// waitFile waits until file exists and reports whether it does, false when ctx ends first.
func waitFile(ctx context.Context, file string) bool {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(file); err == nil {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

func TestOneshotStartFailureIsUnrecoverable(t *testing.T) {
	task := newTask(t, load(t, `  - name: missing
    description: a program that does not exist
    execute:
      exec: {command: "/nonexistent/exec-test-program"}
`))
	_, err := task.Invoke(context.Background(), "missing", nil)
	if !isUnrecoverable(err) {
		t.Errorf("a missing program: %v, want an unrecoverable error", err)
	}
}

func TestLoadProblems(t *testing.T) {
	tests := []struct{ name, actions, path, typ string }{
		{"parameter in command", `  - name: a
    description: d
    parameters: {properties: {p: {type: string}}}
    execute: {exec: {command: "{parameters.p}"}}
`, "actions[0].execute.exec.command", "forbidden"},
		{"parameter in server args", `  - name: a
    description: d
    parameters: {properties: {p: {type: string}}}
    execute: {exec: {command: "x", args: ["--p={parameters.p}"], runtime: server}}
`, "actions[0].execute.exec.args[0]", "forbidden"},
		{"timeout over a day", `  - name: a
    description: d
    execute: {exec: {command: "x", timeout_ms: 86400001}}
`, "actions[0].execute.exec.timeout_ms", "invalid"},
		{"timeout that would overflow", `  - name: a
    description: d
    execute: {exec: {command: "x", timeout_ms: 9223372036854775}}
`, "actions[0].execute.exec.timeout_ms", "invalid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tool.Load(context.Background(), []byte(header+tc.actions))
			var verr *tool.ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("load: %v, want a ValidationError", err)
			}
			for _, p := range verr.Problems {
				if p.Path == tc.path && p.Type == tc.typ {
					return
				}
			}
			t.Errorf("problems %v lack (%s, %s)", verr.Problems, tc.path, tc.typ)
		})
	}
}

// Arguments are interpolated one argv entry each, with no shell; a relative dir is taken from the manifest file's
// directory.
func TestOneshotArgsAndRelativeDir(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(root, "tool.yaml")
	src := header + fmt.Sprintf(`  - name: argv
    description: prints its arguments
    parameters:
      properties:
        text: {type: string}
        count: {type: integer, default: 2}
    execute:
      exec:
        command: %q
        args: ["--text={parameters.text}", "{parameters.count}", "{settings.mode}", "literal {{braces}}"]
        dir: work
`, prog("printenv"))
	if err := os.WriteFile(manifest, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	tl, err := tool.LoadFile(context.Background(), manifest, tool.WithSettings(map[string]any{"mode": "fast"}))
	if err != nil {
		t.Fatal(err)
	}
	task := newTask(t, tl)
	res := invoke(t, task, "argv", map[string]any{"text": "a b; $(touch pwned) 'q'"})
	if res.IsError {
		t.Fatal(res.Error)
	}
	out := res.Output.(map[string]any)
	argv, _ := json.Marshal(out["argv"])
	if want := `["--text=a b; $(touch pwned) 'q'","2","fast","literal {braces}"]`; string(argv) != want {
		t.Errorf("argv %s, want %s", argv, want)
	}
	wantDir, _ := filepath.EvalSymlinks(filepath.Join(root, "work"))
	if gotDir, _ := filepath.EvalSymlinks(out["cwd"].(string)); gotDir != wantDir {
		t.Errorf("working directory %q, want %q", gotDir, wantDir)
	}
}
