package temporaltool

import (
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// waits is what eventsWorkflow saw: the activation IDs Next returned, "timeout" where its timer fired.
type waits struct {
	Got  []string
	Seen []string
	At   []time.Duration // workflow time of each, from the start
}

// eventsWorkflow calls Next n times with timeout.
func eventsWorkflow(ctx workflow.Context, n int, timeout time.Duration) (waits, error) {
	var w waits
	start := workflow.Now(ctx)
	events := NewEvents(ctx)
	for range n {
		a, ok := events.Next(ctx, timeout)
		if !ok {
			a.ID = "timeout"
		}
		w.Got = append(w.Got, a.ID)
		w.At = append(w.At, workflow.Now(ctx).Sub(start))
	}
	w.Seen = events.Seen()
	return w, nil
}

func TestEventsTakeEachActivationIDOnceAndTheTimerFires(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflow(eventsWorkflow)
	signal := func(at time.Duration, id string) {
		env.RegisterDelayedCallback(func() {
			env.SignalWorkflow(SignalName, Activation{V: Version, ID: id, Event: "order_shipped"})
		}, at)
	}
	signal(time.Minute, "a")
	signal(2*time.Minute, "a") // a retried delivery past the Router's window: the same ID
	signal(3*time.Minute, "b")
	signal(4*time.Minute, "a")
	env.ExecuteWorkflow(eventsWorkflow, 3, time.Hour)
	var w waits
	if err := env.GetWorkflowResult(&w); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "timeout"}; !slices.Equal(w.Got, want) {
		t.Fatalf("Next gave %v, want %v", w.Got, want)
	}
	if !slices.Equal(w.Seen, []string{"a", "b"}) {
		t.Errorf("Seen %v", w.Seen)
	}
	// The timer of the third wait starts at 3m and is not restarted by the duplicate at 4m.
	if w.At[2] != 3*time.Minute+time.Hour {
		t.Errorf("the timer fired at %v, want 1h03m", w.At[2])
	}
}

func TestEventsAfterContinueAsNewSkipTheSeenIDs(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	wf := func(ctx workflow.Context) (string, error) {
		events := NewEvents(ctx, "a")
		a, ok := events.Next(ctx, time.Hour)
		if !ok {
			return "", errors.New("timer")
		}
		return a.ID, nil
	}
	env.RegisterWorkflow(wf)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalName, Activation{ID: "a"}) }, time.Minute)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalName, Activation{ID: "c"}) }, 2*time.Minute)
	env.ExecuteWorkflow(wf)
	var got string
	if err := env.GetWorkflowResult(&got); err != nil || got != "c" {
		t.Errorf("Next gave %q (%v), want c", got, err)
	}
}

func TestPendingTakesWhatArrivedWithoutWaiting(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	wf := func(ctx workflow.Context) ([]string, error) {
		events := NewEvents(ctx)
		if err := workflow.Sleep(ctx, time.Hour); err != nil {
			return nil, err
		}
		var ids []string
		for _, a := range events.Pending() {
			ids = append(ids, a.ID)
		}
		return append(ids, "|", strconv.Itoa(len(events.Pending()))), nil
	}
	env.RegisterWorkflow(wf)
	for i, id := range []string{"x", "y", "x"} {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalName, Activation{ID: id}) }, time.Duration(i+1)*time.Minute)
	}
	env.ExecuteWorkflow(wf)
	var got []string
	if err := env.GetWorkflowResult(&got); err != nil || !slices.Equal(got, []string{"x", "y", "|", "0"}) {
		t.Errorf("Pending gave %v (%v), want [x y | 0]", got, err)
	}
}
