//go:build linux

package subprocess_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/internal/contain"
	"github.com/commonagents-go/tool/internal/leakcheck"
)

// escapeAction is an exec action running the escape test program (as a server when runtime is server).
func escapeAction(runtime string, timeoutMS int) string {
	return fmt.Sprintf(`  - name: work
    description: starts a child that leaves its process group
    execute:
      exec: {command: %q, args: [%q], runtime: %s, timeout_ms: %d}
`, prog("escape"), runtime, runtime, timeoutMS)
}

// ownCgroup is the cgroup v2 path of this process, as /proc/self/cgroup names it.
func ownCgroup() string {
	b, _ := os.ReadFile("/proc/self/cgroup")
	for line := range strings.Lines(string(b)) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			return p
		}
	}
	return ""
}

// wantMode is the containment this machine gives processes by default: a cgroup where this process can write
// its cgroup v2, a process group elsewhere.
func wantMode(t *testing.T) string {
	if contain.Detect() != "" {
		return contain.ModeCgroup
	}
	t.Logf("no writable cgroup v2 here: asserting the process-group fallback, which setsid escapes")
	return contain.ModeProcessGroup
}

// childOf reads the escaped child's pid from a result and makes sure the test does not leave it behind.
func childOf(t *testing.T, res *tool.Result) int {
	t.Helper()
	if res.IsError {
		t.Fatalf("the call failed: %v", res.Error)
	}
	n, err := res.Output.(map[string]any)["child"].(json.Number).Int64()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(int(n), syscall.SIGKILL) })
	return int(n)
}

// A oneshot's result is what its program wrote before it exited: a child that escaped the process group and
// holds stdout neither delays the result into a timeout nor, where cgroups are writable, outlives the call. The
// timeout is shorter than the drain grace that used to end such a call.
func TestOneshotEscapedChild(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []tool.Option
		mode func(*testing.T) string
	}{
		{"default", nil, wantMode},
		{"process groups only", []tool.Option{tool.WithCgroupParent("")}, func(*testing.T) string { return contain.ModeProcessGroup }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			facts := &recorder{}
			task := newTask(t, load(t, escapeAction("oneshot", 1900), append(tc.opts, tool.WithObserver(facts))...))
			res := invoke(t, task, "work", nil)
			child := childOf(t, res)
			mode := tc.mode(t)
			if got := res.ServerData["containment"]; got != mode {
				t.Errorf("ServerData containment %v, want %s", got, mode)
			}
			if f := facts.find("exec.process.started"); f == nil || f.Data["containment"] != mode || f.Data["action"] != "work" {
				t.Errorf("exec.process.started fact %v, want containment %s", f, mode)
			}
			if mode == contain.ModeCgroup {
				if !gone(child) { // no waiting: the call returns once its cgroup is empty
					t.Errorf("the setsid child %d outlived the call: %s", child, procStat(child))
				}
				return
			}
			if gone(child) {
				t.Errorf("the setsid child %d is gone: a process group cannot reach it, so the fallback is not what ran", child)
			}
		})
	}
}

// A server's setsid child ends with the task, where cgroups are writable.
func TestServerEscapedChildEndsWithTask(t *testing.T) {
	leakcheck.Check(t)
	facts := &recorder{}
	tl := load(t, escapeAction("server", 10000), tool.WithObserver(facts),
		tool.WithLimits(tool.Limits{TeardownTimeout: 2e9}))
	task, err := tl.NewTask(context.Background(), tool.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := task.Invoke(context.Background(), "work", nil)
	if err != nil {
		t.Fatal(err)
	}
	child := childOf(t, res)
	if err := task.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	mode := wantMode(t)
	if f := facts.find("exec.server.started"); f == nil || f.Data["containment"] != mode {
		t.Errorf("exec.server.started fact %v, want containment %s", f, mode)
	}
	if mode == contain.ModeCgroup {
		if !gone(child) {
			t.Errorf("the setsid child %d outlived Task.Close: %s", child, procStat(child))
		}
	} else if gone(child) {
		t.Errorf("the setsid child %d is gone: a process group cannot reach it, so the fallback is not what ran", child)
	}
}

// WithCgroupParent puts each process in a child of the host's cgroup and removes it after the call; a directory
// that is not a writable cgroup v2 is refused at Load.
func TestCgroupParentOption(t *testing.T) {
	_, err := tool.Load(context.Background(), []byte(header+escapeAction("oneshot", 10000)),
		tool.WithCgroupParent(t.TempDir()))
	if err == nil || !strings.Contains(err.Error(), "WithCgroupParent") {
		t.Errorf("a plain directory as the cgroup parent: %v, want a WithCgroupParent error", err)
	}
	own := contain.Detect()
	if own == "" {
		t.Log("no writable cgroup v2 here: only the refusal is checked")
		return
	}
	parent := filepath.Join(own, fmt.Sprintf("exec-test-%d", os.Getpid()))
	if err := os.Mkdir(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(parent) })
	task := newTask(t, load(t, escapeAction("oneshot", 10000), tool.WithCgroupParent(parent)))
	res := invoke(t, task, "work", nil)
	_ = childOf(t, res)
	want := path.Join(ownCgroup(), filepath.Base(parent)) + "/tool-" // as /proc/PID/cgroup names it
	got, _ := res.Output.(map[string]any)["cgroup"].(string)
	if !strings.HasPrefix(got, want) {
		t.Errorf("the child ran in cgroup %q, want a child of %s", got, parent)
	}
	entries, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			t.Errorf("cgroup %s left behind after the call", e.Name())
		}
	}
}
