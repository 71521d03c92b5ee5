// Package tool is the Go runtime for Common Agent Specification tool manifests
// (kind commonagents.info/v1beta2/tool): it loads a manifest once, offers its actions to an LLM as functions, and
// runs the calls the LLM makes.
//
// A complete tool loop, with any LLM SDK in place of model:
//
//	t, err := tool.LoadFile(ctx, "github-file.yaml", tool.WithSettings(settings))
//	if err != nil {
//		return err // a *ValidationError lists every problem with its field path, line and column
//	}
//	task, err := t.NewTask(ctx, tool.TaskConfig{Capability: tool.Capability{Bindings: bindings}})
//	if err != nil {
//		return err
//	}
//	defer task.Close(ctx) // the task lives until Close: ctx bounds NewTask only
//
//	offer(task.Functions()) // name, description and a JSON Schema each; StrictSchema and AnthropicSchema adapt it
//	for call := range model.ToolCalls() {
//		res, err := task.InvokeFunction(tool.ContextWithCallID(ctx, call.ID), call.Name, call.Arguments)
//		if err != nil { // unrecoverable: tell the user and end the conversation (the deferred Close ends the task)
//			return err
//		}
//		model.Send(call.ID, res.Text(), res.IsError) // mistakes the model can fix come back as results
//	}
//
// # The names a host needs
//
// [Load] (or [LoadFile]) once per manifest; [Tool.NewTask] per conversation or job; [Task.Functions] to offer the
// LLM; [Task.InvokeFunction] for each of its calls; [Result.Text] for what goes back to it; [Task.Close] at the end.
// Everything else in this package is for hosts that go further: events, durable state, approvals, observation.
//
// # Results and errors
//
// A call the model got wrong (an unknown name, arguments that are not valid) and a backend failure it may work
// around come back as a Result with IsError set and Error describing it, for the model to read (SPEC §7.1). An
// error returned by InvokeFunction or Invoke is unrecoverable: it wraps ErrUnrecoverable (or is ErrClosed, or the
// ctx's error). The library reports it and does not close the task; the host decides, and SPEC §7.1 says it ends
// the task: tell the user, then call Task.Close. Calls to the task's other functions still work until then.
//
// # The task's life
//
// A task lives from NewTask (or RestoreTask) until Task.Close, which tears down what it started and removes its
// state from the Store, or until TaskConfig.ExpiresAt, which does the same at a time the host chose. The ctx given
// to NewTask bounds that call only, so a task made in an HTTP handler outlives the request. Task.Detach ends a
// task in this process only, keeping its state for another to restore.
//
// # Loading
//
// Load validates everything and compiles every template, JSON Schema and CEL expression, reporting all problems
// with field paths. The resulting Tool shows its actions to the LLM as functions (Functions) and describes them
// for the host's inventory (Catalog); a Task's Functions and Catalog use its own capability. NewTask checks the
// task's configuration against the manifest: bindings, the approver, and the Context keys the actions read.
//
// # Events
//
// A pushed payload (webhook, subscription push) goes through Task.Deliver or a Router mounted on the
// host's mux, which routes it to the tasks whose allow list matches the event's filter; each Activation goes to
// the task's Sink. Subscriptions and polls run in the background from NewTask to Close (Interrupt and Resume
// pause them; an event's timeout ends them).
//
// # Hosts' interfaces
//
// Hosts plug in through small interfaces: Store (task state; NewMemoryStore by default, store/postgres for
// durable, shared state), Clock, AuthProvider, Observer (lifecycle facts), Sink, Mux. With a durable Store,
// Tool.RestoreTask continues a task after a restart and Task.Detach hands one over; several replicas may share
// tasks. Package tooltest is the harness for hosts' tests: a fake clock, recorders, a stub server and a signer.
//
// Action backends live in subpackages of runtime and receive backends in subpackages of events; importing this
// package registers every built-in one except kubernetes_job (client-go is heavy). A blank import of
// runtime/kubernetesjob registers that one too, in runtime.Default(), so manifests that use it load; its calls
// need a cluster client, which a host gives with a configured kubernetesjob.Backend, its Registry and
// WithRuntimes.
//
// The manifest format is described in docs/manifest.md of the repository, whose section numbers are those the
// "SPEC §" references in this documentation give.
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
