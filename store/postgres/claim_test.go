package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/tooltest"
)

// TestClaimsAcrossReplicas runs one task on two replicas, each with its own Store on one PostgreSQL schema (the
// one-round-trip claim of store.ClaimStore): a retry at r2 while r1's Sink works is in_flight (the Router's 503),
// a duplicate once r1's Sink accepted; a delivery r1's Sink refused activates at r2.
func TestClaimsAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	schema := newSchema(t)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	refuse := errors.New("sink full")
	sinks := [2]tool.SinkFunc{
		func(_ context.Context, a tool.Activation) error {
			switch a.DeliveryID {
			case "d-1":
				entered <- struct{}{}
				<-release
			case "d-2":
				return refuse
			}
			return nil
		},
		func(context.Context, tool.Activation) error { return nil },
	}
	var tasks [2]*tool.Task
	for i, replica := range []string{"r1", "r2"} {
		tl, err := tool.Load(ctx, []byte(hooks), tool.WithStore(open(t, schema)), tool.WithReplicaID(replica),
			tool.WithSettings(map[string]any{"secret": "s3cret"}))
		if err != nil {
			t.Fatal(err)
		}
		cfg := tool.TaskConfig{ID: "t1", Sink: sinks[i], Capability: tool.Capability{Bindings: map[string]any{"repo": "o/r"}}}
		start := tl.NewTask
		if i == 1 {
			start = tl.RestoreTask
		}
		if tasks[i], err = start(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		defer tasks[i].Detach(ctx)
	}
	signer := tooltest.Signer{Secret: "s3cret"}
	body := []byte(`{"ref":"refs/heads/main","repository":{"full_name":"o/r"}}`)
	reason := func(d *tool.Delivery) string {
		if len(d.Activations) == 1 {
			return "activated"
		}
		if len(d.Discarded) == 1 {
			return d.Discarded[0].Reason
		}
		return "?"
	}
	done := make(chan *tool.Delivery)
	go func() { d, _ := tasks[0].Deliver(ctx, signer.GitHub(body, "d-1")); done <- d }()
	<-entered
	d, err := tasks[1].Deliver(ctx, signer.GitHub(body, "d-1"))
	if err != nil || reason(d) != tool.ReasonInFlight {
		t.Errorf("retry at r2 while r1's Sink works: %+v, %v; want in_flight", d, err)
	}
	close(release)
	if d := <-done; d == nil || reason(d) != "activated" {
		t.Errorf("first attempt at r1: %+v", d)
	}
	if d, err := tasks[1].Deliver(ctx, signer.GitHub(body, "d-1")); err != nil || reason(d) != tool.ReasonDuplicate {
		t.Errorf("retry at r2 after r1's Sink accepted: %+v, %v; want duplicate", d, err)
	}
	if _, err := tasks[0].Deliver(ctx, signer.GitHub(body, "d-2")); !errors.Is(err, tool.ErrNotAccepted) {
		t.Fatalf("r1's Sink refused d-2: %v", err)
	}
	if d, err := tasks[1].Deliver(ctx, signer.GitHub(body, "d-2")); err != nil || reason(d) != "activated" {
		t.Errorf("retry of the refused d-2 at r2: %+v, %v; want activated", d, err)
	}
}
