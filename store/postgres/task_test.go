package postgres_test

import (
	"strings"
	"testing"

	"github.com/commonagents-go/tool"
)

const pricing = `
kind: commonagents.info/v1beta2/tool
namespace: docs
name: pricing
description: Prices orders.
parameters:
  properties:
    currency: { type: string, require_binding: true }
actions:
  - name: quote
    description: Prices a quantity of items.
    parameters:
      properties:
        quantity: { type: integer, minimum: 1 }
    execute:
      cel:
        expression: "{'total': double(input.quantity) * 2.5, 'currency': input.currency}"
`

// TestTaskState runs a task through the public API with the PostgreSQL Store: its state lands in the database,
// where another replica's Store sees it, and Close removes it.
func TestTaskState(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	ctx := t.Context()
	store, replica := open(t, schema), open(t, schema)
	tl, err := tool.Load(ctx, []byte(pricing), tool.WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	task, err := tl.NewTask(ctx, tool.TaskConfig{ID: "t1",
		Capability: tool.Capability{Bindings: map[string]any{"currency": "EUR"}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := task.Invoke(ctx, "quote", map[string]any{"quantity": 4})
	if err != nil || res.Error != nil {
		t.Fatalf("Invoke = %+v, %v", res, err)
	}
	if got := string(res.OutputJSON); got != `{"currency":"EUR","total":10}` {
		t.Fatalf("output %s", got)
	}
	keys, err := replica.List(ctx, "tasks/docs/pricing/t1/")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) == 0 {
		t.Fatal("no task state in the database")
	}
	allow, err := replica.Get(ctx, "tasks/docs/pricing/t1/allowlist")
	if err != nil || !strings.Contains(string(allow), "EUR") {
		t.Fatalf("allow list seen by another replica = %q, %v; want the binding", allow, err)
	}
	if err := task.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if keys, err := replica.List(ctx, "tasks/docs/pricing/t1/"); err != nil || len(keys) != 0 {
		t.Fatalf("state after Close = %q, %v; want none", keys, err)
	}
}
