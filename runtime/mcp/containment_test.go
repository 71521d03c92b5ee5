//go:build linux

package mcp_test

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/internal/contain"
)

// A stdio server's child that left its process group (setsid) ends with the task where this process can write
// its cgroup v2: the server runs in a cgroup of its own, killed whole at Close. Elsewhere the fallback, a process
// group, cannot reach it, and the test asserts that this is what ran.
func TestTeardownEndsAnEscapedChild(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []tool.Option
		mode string
	}{
		{"default", nil, map[bool]string{true: contain.ModeCgroup, false: contain.ModeProcessGroup}[contain.Detect() != ""]},
		{"process groups only", []tool.Option{tool.WithCgroupParent("")}, contain.ModeProcessGroup},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			childFile := filepath.Join(t.TempDir(), "child")
			rec := &facts{}
			tl := load(t, manifest(stdioServer("MCPSERVER_STUBBORN: "+childFile, `MCPSERVER_SETSID: "1"`), "pid"),
				append(tc.opts, tool.WithObserver(rec), tool.WithLimits(tool.Limits{TeardownTimeout: 3 * time.Second}))...)
			task := newTask(t, tl)
			if res, err := task.Invoke(context.Background(), "pid", nil); err != nil || res.IsError {
				t.Fatalf("pid: %v %+v", err, res)
			}
			child, err := strconv.Atoi(strings.Join(lines(t, childFile), ""))
			if err != nil {
				t.Fatalf("child pid: %v", err)
			}
			t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
			if err := task.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			started := rec.named("mcp.server.started")
			if len(started) != 1 || started[0].Data["containment"] != tc.mode || started[0].Data["server"] != "mcp" {
				t.Errorf("mcp.server.started facts %+v, want one with containment %s", started, tc.mode)
			}
			state := procState(child)
			if tc.mode == contain.ModeCgroup {
				if state != "" && state != "Z" { // no waiting: Close returns once the cgroup is empty
					t.Errorf("the server's setsid child %d is in state %q after Close, want gone", child, state)
				}
				return
			}
			if state == "" || state == "Z" {
				t.Errorf("the setsid child %d is gone: a process group cannot reach it, so the fallback is not what ran", child)
			}
		})
	}
}
