package subprocess_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/internal/leakcheck"
	"github.com/commonagents-go/tool/internal/testflags"
	"github.com/commonagents-go/tool/runtime/subprocess/internal/testprograms"
)

// bin is the directory of the test programs (internal/testprograms): links to the test binary, one under each
// program's name, made by TestMain. Run under one of those names, the test binary is that program: testprograms
// runs it from its init, before TestMain.
var bin string

func TestMain(m *testing.M) {
	dir, err := linkPrograms()
	if err != nil {
		fmt.Fprintln(os.Stderr, "linking the test programs:", err)
		os.Exit(1)
	}
	bin = dir
	testflags.WaitBoundParallel(4) // the parallel tests wait on real timeouts of real processes
	code := m.Run()
	if err := leakcheck.Remaining(); code == 0 && err != nil { // what the parallel tests, which skip Check, left
		fmt.Fprintln(os.Stderr, "leakcheck:", err)
		code = 1
	}
	_ = os.RemoveAll(bin)
	os.Exit(code)
}

// linkPrograms makes a temporary directory holding a link to the test binary under each program's name.
func linkPrograms() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "exec-testprograms-")
	if err != nil {
		return "", err
	}
	for _, name := range testprograms.Names() {
		if err := os.Symlink(self, filepath.Join(dir, name)); err != nil {
			_ = os.RemoveAll(dir)
			return "", err
		}
	}
	return dir, nil
}

// prog is the path of a test program.
func prog(name string) string { return filepath.Join(bin, name) }

const header = `kind: "commonagents.info/v1beta2/tool"
namespace: "test"
name: "exec-test"
description: "exec backend tests"
actions:
`

// load loads a manifest of header plus actions, failing the test on error.
func load(t testing.TB, actions string, opts ...tool.Option) *tool.Tool {
	t.Helper()
	opts = append([]tool.Option{tool.WithLogger(slog.New(slog.DiscardHandler))}, opts...)
	tl, err := tool.Load(context.Background(), []byte(header+actions), opts...)
	if err != nil {
		t.Fatalf("load: %v\n%s", err, actions)
	}
	return tl
}

// parallelTests are the top-level tests that run in parallel (their timeouts are real time, so together they
// take as long as the slowest): goroutines are checked for them once, after every test (TestMain), not by Check.
var parallelTests sync.Map

// parallel marks t to run in parallel with the other parallel tests.
func parallel(t *testing.T) {
	t.Parallel()
	parallelTests.Store(t.Name(), true)
}

// newTask starts a task and closes it at the end of the test, after which no goroutine may remain.
func newTask(t *testing.T, tl *tool.Tool) *tool.Task {
	t.Helper()
	if top, _, _ := strings.Cut(t.Name(), "/"); !isParallel(top) {
		leakcheck.Check(t)
	}
	task, err := tl.NewTask(context.Background(), tool.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := task.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return task
}

// invoke runs one call that must not fail with a Go error.
func invoke(t *testing.T, task *tool.Task, action string, args map[string]any) *tool.Result {
	t.Helper()
	res, err := task.Invoke(context.Background(), action, args)
	if err != nil {
		t.Fatalf("invoke %s %v: %v", action, args, err)
	}
	return res
}

// wantError checks that res failed with kind and a message containing every one of parts.
func wantError(t *testing.T, res *tool.Result, kind string, parts ...string) {
	t.Helper()
	if !res.IsError || res.Error == nil {
		t.Fatalf("want a %s error, got output %s", kind, res.OutputJSON)
	}
	if res.Error.Kind != kind {
		t.Errorf("error kind %q (%s), want %q", res.Error.Kind, res.Error.Message, kind)
	}
	for _, p := range parts {
		if !strings.Contains(res.Error.Message, p) {
			t.Errorf("error message %q lacks %q", res.Error.Message, p)
		}
	}
}

// waitGone waits until no process with each pid is left, except a zombie whose parent is not this test (an
// orphan the system has to reap): a zombie child of ours would mean the backend never waited for it.
func waitGone(t *testing.T, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for !gone(pid) {
			if time.Now().After(deadline) {
				t.Errorf("process %d still exists: %s", pid, procStat(pid))
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func gone(pid int) bool {
	stat := procStat(pid)
	if stat == "" {
		return true
	}
	fields := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])
	state, ppid := fields[0], fields[1]
	return (state == "Z" || state == "X") && ppid != strconv.Itoa(os.Getpid())
}

func procStat(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	return string(b)
}

func isUnrecoverable(err error) bool { return errors.Is(err, tool.ErrUnrecoverable) }

func isParallel(name string) bool { _, ok := parallelTests.Load(name); return ok }
