package tooltest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/tooltest"
)

// Example drives a task with tooltest's parts that need no *testing.T: a fake clock (the task's time, and
// Standard Webhooks' timestamps), a signer, a recording Sink and a recording Observer. In a test, Sink.Wait,
// Observer.Wait, Clock.BlockUntil, Server, Load and NewTask do the waiting and the failing for you.
func Example() {
	manifest := []byte(`
kind: commonagents.info/v1beta2/tool
namespace: docs
name: billing
description: Follows invoices.
settings:
  properties:
    secret: {type: string, format: password}
events:
  - name: invoice_paid
    description: An invoice was paid.
    message: "Invoice {event.payload.invoice} paid"
    receive:
      webhook:
        secret: "{settings.secret}"
`)
	ctx := context.Background()
	clock := tooltest.NewClock(time.Date(2026, 5, 20, 3, 45, 0, 0, time.UTC))
	sink, obs := tooltest.NewSink(), tooltest.NewObserver()
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // Standard Webhooks secrets are base64
	t, err := tool.Load(ctx, manifest, tool.WithClock(clock), tool.WithObserver(obs),
		tool.WithSettings(map[string]any{"secret": secret}))
	if err != nil {
		fmt.Println(err)
		return
	}
	task, err := t.NewTask(ctx, tool.TaskConfig{Sink: sink})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer task.Close(ctx)

	signer := tooltest.Signer{Secret: secret}
	in := signer.Standard([]byte(`{"invoice": "in_42"}`), "msg_1", clock.Now()) // webhook-id, -timestamp, -signature
	if _, err := task.Deliver(ctx, in); err != nil {
		fmt.Println(err)
		return
	}
	clock.Advance(10 * time.Minute) // past the 5-minute tolerance, a replayed signature is refused
	stale := signer.Standard([]byte(`{"invoice": "in_43"}`), "msg_2", clock.Now().Add(-10*time.Minute))
	d, _ := task.Deliver(ctx, stale)

	for _, a := range sink.Activations() {
		fmt.Println("sink:", a.Message)
	}
	fmt.Println("stale:", d.Discarded[0].Reason)
	fmt.Println("facts:", len(obs.Facts("event.activated")), "activated,", len(obs.Facts("event.discarded")), "discarded")
	// Output:
	// sink: Invoice in_42 paid
	// stale: bad_signature
	// facts: 1 activated, 1 discarded
}
