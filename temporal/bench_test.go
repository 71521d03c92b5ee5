package temporaltool

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"
)

const roundTripWorkflowName = "round_trips"

// roundTripWorkflow starts a task and runs n pairs of activities with the same input and output types, one
// after another: the no-op activity and the Invoke of an in-process function (shop_total, cel), their order
// alternating, so that both see the same server, worker and machine.
func roundTripWorkflow(ctx workflow.Context, task TaskRef, n int) error {
	ctx = workflow.WithActivityOptions(ctx, DefaultActivityOptions())
	if _, err := Start(ctx, StartInput{Task: task}); err != nil {
		return err
	}
	defer Close(ctx, task)
	args := json.RawMessage(`{"first":1,"second":2}`)
	for i := range n {
		c := Call{Task: task, CallID: fmt.Sprintf("%s-%d", task.ID, i), Function: "shop_total", Args: args}
		noopCall := func() error { return workflow.ExecuteActivity(ctx, noopName, c).Get(ctx, nil) }
		invoke := func() error { _, err := Invoke(ctx, c); return err }
		first, second := noopCall, invoke
		if i%2 == 1 {
			first, second = invoke, noopCall
		}
		if err := first(); err != nil {
			return err
		}
		if err := second(); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkActivityRoundTrip measures what the adapter adds to an activity's round trip (scheduled → completed
// in the history) against the no-op activity, interleaved, on the dev server, over PostgreSQL when
// TOOL_TEST_POSTGRES_DSN is set (else the memory store). b.N pairs:
//
//	go test -run '^$' -bench ActivityRoundTrip -benchtime 200x
func BenchmarkActivityRoundTrip(b *testing.B) {
	c := dial(b)
	s := newShop(b)
	queue := "bench-" + nonce()
	inProcessWorker(b, workerConfig{TemporalAddr: temporalAddr(b), TaskQueue: queue, DSN: os.Getenv("TOOL_TEST_POSTGRES_DSN"),
		ShopURL: s.URL, ReplicaID: "bench", Temporal: true})
	id := "acme-bench-" + nonce()
	b.ResetTimer()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	wr, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, roundTripWorkflowName, ref(id), b.N)
	if err != nil {
		b.Fatal(err)
	}
	if err := wr.Get(ctx, nil); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	scheduled := map[int64]string{}
	at := map[int64]time.Time{}
	trips := map[string][]time.Duration{}
	for _, e := range history(b, c, id) {
		switch e.GetEventType() {
		case enums.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			scheduled[e.GetEventId()] = e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
			at[e.GetEventId()] = e.GetEventTime().AsTime()
		case enums.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			sid := e.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()
			trips[scheduled[sid]] = append(trips[scheduled[sid]], e.GetEventTime().AsTime().Sub(at[sid]))
		}
	}
	p := func(name string, q float64) float64 {
		d := slices.Clone(trips[name])
		slices.Sort(d)
		return float64(d[int(q*float64(len(d)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(p(noopName, 0.5), "noop-p50-ms")
	b.ReportMetric(p(ActivityInvoke, 0.5), "invoke-p50-ms")
	b.ReportMetric(p(ActivityInvoke, 0.5)-p(noopName, 0.5), "added-p50-ms")
	b.ReportMetric(p(noopName, 0.9), "noop-p90-ms")
	b.ReportMetric(p(ActivityInvoke, 0.9), "invoke-p90-ms")
}
