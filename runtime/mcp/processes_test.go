package mcp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/runtime"
)

// TestStdioServersCountAgainstMaxProcesses: a task's stdio servers take slots of Limits.MaxProcesses while they
// run. At the bound, a call that would start another fails with a recoverable unavailable error naming the limit
// and starts nothing; the task goes on.
func TestStdioServersCountAgainstMaxProcesses(t *testing.T) {
	t.Parallel()
	src := manifest(stdioServer(), "echo") + "  - name: echo2\n    description: Echoes through a server of its own.\n" +
		"    parameters:\n      properties:\n        text: {type: string}\n" +
		"    execute:\n      mcp:\n        tool_name: echo\n" + indent(stdioServer(), "      ")
	for _, bound := range []int{1, 2} {
		tl := load(t, src, tool.WithLimits(tool.Limits{MaxProcesses: bound}))
		task, err := tl.NewTask(context.Background(), tool.TaskConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if res, err := task.Invoke(context.Background(), "echo", map[string]any{"text": "a"}); err != nil || res.IsError {
			t.Fatalf("echo: %v %+v", err, res)
		}
		res, err := task.Invoke(context.Background(), "echo2", map[string]any{"text": "b"})
		if err != nil {
			t.Fatalf("bound %d: echo2 ended the task: %v", bound, err)
		}
		refused := res.IsError && res.Error.Kind == runtime.KindUnavailable &&
			strings.Contains(res.Error.Message, "max_processes 1")
		if refused != (bound == 1) {
			t.Errorf("bound %d: echo2 %+v, refused %v, want refused only at bound 1", bound, res.Error, refused)
		}
		if res, err := task.Invoke(context.Background(), "echo", map[string]any{"text": "c"}); err != nil || res.IsError {
			t.Errorf("bound %d: echo after echo2: %v %+v", bound, err, res)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		if err := task.Close(ctx); err != nil {
			t.Error(err)
		}
		cancel()
	}
}

// indent prefixes every line of s with prefix.
func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+prefix) + "\n"
}
