package mcp_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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
