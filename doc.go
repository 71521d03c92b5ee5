// Package tool is the Go runtime for Common Agent Specification tool manifests
// (kind commonagents.info/v1beta2/tool).
//
// A host loads a manifest once with Load, which validates everything and compiles every template, JSON Schema and
// CEL expression, reporting all problems with field paths. The resulting Tool shows its actions to the LLM as
// functions (Functions) and describes them for the host's inventory (Catalog).
//
// Tasks: Tool.NewTask starts one use of the tool by an agent, with the capability's bindings. Task.Invoke (or
// InvokeFunction with the LLM's JSON, or Start for an asynchronous Call) runs an action; recoverable failures come
// back in Result.Error for the LLM, an error wrapping ErrUnrecoverable ends the task. Task.Close tears down what
// the task started.
//
// Events: a pushed payload (webhook, subscription push) goes through Task.Deliver or a Router mounted on the
// host's mux, which routes it to the tasks whose allow list matches the event's filter; each Activation goes to
// the task's Sink. Subscriptions and polls run in the background from NewTask to Close (Interrupt and Resume
// pause them; an event's timeout ends them).
//
// Hosts plug in through small interfaces: Store (task state; NewMemoryStore by default, store/postgres for
// durable, shared state), Clock, AuthProvider, Observer (lifecycle facts), Sink, Mux. With a durable Store,
// Tool.RestoreTask continues a task after a restart and Task.Detach hands one over; several replicas may share
// tasks. Package tooltest is the harness for hosts' tests: a fake clock, recorders, a stub server and a signer.
//
// Action backends live in subpackages of runtime and receive backends in subpackages of events; importing this
// package registers every built-in one except kubernetes_job, which hosts enable with
// kubernetesjob.Backend.Registry and WithRuntimes (client-go is heavy).
package tool

import (
	// The built-in backends register themselves.
	_ "github.com/commonagents-go/tool/events/poll"
	_ "github.com/commonagents-go/tool/events/subscription"
	_ "github.com/commonagents-go/tool/events/webhook"
	_ "github.com/commonagents-go/tool/runtime/celexpr"
	_ "github.com/commonagents-go/tool/runtime/mcp"
	_ "github.com/commonagents-go/tool/runtime/openapi"
	_ "github.com/commonagents-go/tool/runtime/statefulsession"
	_ "github.com/commonagents-go/tool/runtime/statelesshttp"
	_ "github.com/commonagents-go/tool/runtime/subprocess"
)
