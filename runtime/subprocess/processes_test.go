package subprocess_test

import (
	"context"
	"strings"
	"testing"

	"github.com/commonagents-go/tool"
)

// TestProcessesCountAgainstMaxProcesses: an exec server and the program of a oneshot call each take a slot of
// Limits.MaxProcesses while they run. With the server running at a bound of one, a oneshot call fails with a
// recoverable unavailable error naming the limit and the server still answers; at a bound of two both run.
func TestProcessesCountAgainstMaxProcesses(t *testing.T) {
	parallel(t)
	echo := oneshotActions()
	echo = echo[:strings.Index(echo[1:], "  - name:")+1] // the echo action only
	for _, bound := range []int{1, 2} {
		tl := load(t, serverAction(5000)+echo, tool.WithLimits(tool.Limits{MaxProcesses: bound}))
		task, err := tl.NewTask(context.Background(), tool.TaskConfig{})
		if err != nil {
			t.Fatal(err)
		}
		serverPID(t, task) // the server runs
		res := invoke(t, task, "echo", map[string]any{"text": "a"})
		if bound == 1 {
			wantError(t, res, "unavailable", "max_processes 1", "the program of exec action echo")
		} else if res.IsError {
			t.Errorf("bound 2: echo %+v", res.Error)
		}
		serverPID(t, task) // the task goes on
		if err := task.Close(context.Background()); err != nil {
			t.Error(err)
		}
	}
}
