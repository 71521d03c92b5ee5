package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/events/webhook"
)

const manifest = `
kind: commonagents.info/v1beta2/tool
namespace: shop
name: shipping
description: Quotes shipping and says when an order ships.
parameters: {properties: {order: {type: integer, description: The order's number.}}}
actions:
  - name: quote
    description: Quotes the shipping cost of an order, in euros.
    parameters: {properties: {kg: {type: integer, description: The parcel's weight.}}}
    execute: {cel: {expression: "{'order': input.order, 'euros': 5 + 2 * input.kg}"}}
events:
  - name: shipped
    message: "Order {event.payload.data.order} has shipped"
    receive:
      webhook:
        filter: "event.payload.type == 'order.shipped' && event.payload.data.order == parameters.order"
`

const secret = "whsec_c2VjcmV0LWtleQ==" // the shop's Standard Webhooks secret

func main() {
	ctx := context.Background()
	t, err := tool.Load(ctx, []byte(manifest), tool.WithWebhookSecret(secret))
	if err != nil {
		log.Fatal(err) // a *tool.ValidationError lists every problem, with line and column
	}
	task, err := t.NewTask(ctx, tool.TaskConfig{Sink: tool.SinkFunc(func(_ context.Context, a tool.Activation) error {
		fmt.Println("woken:", a.Message) // a host queues it for the agent
		return nil
	})})
	if err != nil {
		log.Fatal(err)
	}
	defer task.Close(ctx)
	for _, f := range task.Functions() { // what the LLM is offered
		fmt.Println("function:", f.Name, string(f.Parameters))
	}
	res, err := task.InvokeFunction(ctx, "shipping", []byte(`{"order": 42, "kg": 3}`)) // as the LLM sent it
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("result:", res.Text())
	// Order 42 is in the task's allow list now: of the shop's two signed webhooks, only its one wakes the task.
	for i, order := range []int{7, 42} {
		body := fmt.Appendf(nil, `{"type": "order.shipped", "data": {"order": %d}}`, order)
		in := &tool.Inbound{Body: body, Headers: webhook.SignStandard([]byte(secret), fmt.Sprint("msg_", i), time.Now(), body)}
		d, err := task.Deliver(ctx, in) // a Router does the same for HTTP requests
		if err != nil {
			log.Fatal(err)
		}
		for _, x := range d.Discarded {
			fmt.Println("discarded:", x.Event, x.Reason)
		}
	}
}
