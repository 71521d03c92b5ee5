package temporaltool

import (
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// The histories in testdata/histories were recorded on a dev server (go test -run 'DevServer|WorkerKill'
// -update-histories, with scripts/temporal.sh and scripts/postgres.sh started): replaying them checks that the
// workflow side (Start, Invoke, Close, Events) makes the same commands from the same history, whatever the
// worker's clock, network or library says now.

func histories(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "histories", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded histories (%v)", err)
	}
	return files
}

func replayer(agent any) worker.WorkflowReplayer {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(agent, workflow.RegisterOptions{Name: agentWorkflowName})
	r.RegisterWorkflowWithOptions(collectWorkflow, workflow.RegisterOptions{Name: collectWorkflowName})
	return r
}

func TestReplayRecordedHistories(t *testing.T) {
	for _, f := range histories(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if err := replayer(agentWorkflow).ReplayWorkflowHistoryFromJSONFile(quietLogger, f); err != nil {
				t.Errorf("replay: %v", err)
			}
		})
	}
}

// TestReplayCatchesAChangedWorkflow: the replay above can fail. An agent that sleeps before its first activity
// makes a command the history does not hold.
func TestReplayCatchesAChangedWorkflow(t *testing.T) {
	changed := func(ctx workflow.Context, in AgentInput) (AgentResult, error) {
		if err := workflow.Sleep(ctx, time.Second); err != nil {
			return AgentResult{}, err
		}
		return agentWorkflow(ctx, in)
	}
	f := filepath.Join("testdata", "histories", "agent.json")
	if err := replayer(changed).ReplayWorkflowHistoryFromJSONFile(quietLogger, f); err == nil {
		t.Error("a changed workflow replayed the recorded history without an error")
	}
}
