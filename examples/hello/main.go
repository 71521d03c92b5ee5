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
    receive: {webhook: {filter: "event.payload.data.order == parameters.order"}}
`

func main() {
	ctx, secret := context.Background(), "whsec_c2VjcmV0LWtleQ==" // the shop's Standard Webhooks secret
	t, err := tool.Load(ctx, []byte(manifest), tool.WithWebhookSecret(secret))
	check(err) // a *tool.ValidationError lists every problem, with line and column
	task, err := t.NewTask(ctx, tool.TaskConfig{Sink: tool.SinkFunc(func(_ context.Context, a tool.Activation) error {
		fmt.Println("woken:", a.Message) // a host queues it for the agent
		return nil
	})})
	check(err)
	defer task.Close(ctx)
	for _, f := range task.Functions() { // what the LLM is offered
		fmt.Println("function:", f.Name, string(f.Parameters))
	}
	res, err := task.InvokeFunction(ctx, "shipping", []byte(`{"order": 42, "kg": 3}`)) // as the LLM sent it
	check(err)
	fmt.Println("result:", res.Text())
	for i, order := range []int{7, 42} { // two signed webhooks; a Router does the same for HTTP requests
		body := fmt.Appendf(nil, `{"data": {"order": %d}}`, order)
		d, err := task.Deliver(ctx, &tool.Inbound{Body: body, Headers: webhook.SignStandard([]byte(secret), fmt.Sprint(i), time.Now(), body)})
		check(err)
		for _, x := range d.Discarded {
			fmt.Println("discarded:", x.Event, x.Reason)
		}
	}
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
