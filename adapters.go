package tool

import (
	"context"
	"net/http"
	"time"

	"github.com/commonagents-go/tool/runtime"
	"github.com/commonagents-go/tool/store"
)

// Store keeps task state (SPEC §10); it is store.Store, whose package holds the contract and its optional
// upgrades (store.SwapStore, store.ScanStore, store.RouteStore, ...), which a Store implementer imports.
type Store = store.Store

// NewMemoryStore returns store.NewMemory(): a Store that keeps everything in memory, the default, lost when the
// process ends. It implements every optional upgrade of the store package too.
func NewMemoryStore() Store { return store.NewMemory() }

// Approver decides whether a call that needs approval (Capability.Approve) may run. The task asks it after the
// call's arguments are resolved and validated, before the allow list grows and before the call waits for the
// task's other calls: a denied call leaves no trace, and waiting for a human holds nothing up.
//
// ctx bounds the wait: it is the context given to Invoke, also cancelled when the task closes. Neither the
// host's per-action timeouts (Limits.ActionTimeouts) nor the call timeout run while Approve waits. Approve may
// be called from many goroutines at once.
//
// A nil error with Approved false denies the call: the LLM gets a recoverable denied result carrying Reason,
// and the backend is never reached. An error is recoverable too (the call does not run; the LLM gets a denied
// result that says approval could not be obtained, without the error's text); when ctx ended, the call ends as
// any cancelled call does.
type Approver interface {
	Approve(ctx context.Context, r ApprovalRequest) (Approval, error)
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(ctx context.Context, r ApprovalRequest) (Approval, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, r ApprovalRequest) (Approval, error) {
	return f(ctx, r)
}

// ApprovalRequest is one call waiting for approval.
type ApprovalRequest struct {
	TaskID, CallID string
	// Action is the manifest action, Function its LLM-facing name.
	Action, Function string
	// Arguments are the call's resolved arguments (bindings and defaults included) with the values of secret
	// parameters and settings replaced by "[redacted]".
	Arguments map[string]any
	// Traits are the action's catalog flags: read-only, destructive, idempotent, capabilities, owner.
	Traits runtime.Traits
}

// Approval is an Approver's decision.
type Approval struct {
	Approved bool
	// Reason explains the decision; for a denial it is shown to the LLM.
	Reason string
	// By names who decided (a person, a policy); it appears in the tool.approval.decided fact.
	By string
}

// Elicitor asks the user for what an MCP server requests during a call (elicitation/create, form mode). It must be
// safe for concurrent use; ctx ends with the call.
type Elicitor interface {
	Elicit(ctx context.Context, req ElicitRequest) (ElicitResult, error)
}

// ElicitorFunc adapts a function to Elicitor.
type ElicitorFunc func(ctx context.Context, req ElicitRequest) (ElicitResult, error)

// Elicit calls f.
func (f ElicitorFunc) Elicit(ctx context.Context, req ElicitRequest) (ElicitResult, error) {
	return f(ctx, req)
}

// ElicitRequest is a server's request for user input: a message and the JSON Schema of the answer.
type ElicitRequest = runtime.ElicitRequest

// ElicitResult is the user's answer: Action "accept" with Content, "decline" or "cancel". Fields an accepted
// Content leaves out take the schema's defaults.
type ElicitResult = runtime.ElicitResult

// Sampler answers an MCP server's request for an LLM completion during a call (sampling/createMessage) with the
// host's LLM. It must be safe for concurrent use; ctx ends with the call.
type Sampler interface {
	Sample(ctx context.Context, req SampleRequest) (SampleResult, error)
}

// SamplerFunc adapts a function to Sampler.
type SamplerFunc func(ctx context.Context, req SampleRequest) (SampleResult, error)

// Sample calls f.
func (f SamplerFunc) Sample(ctx context.Context, req SampleRequest) (SampleResult, error) {
	return f(ctx, req)
}

// SampleRequest is a server's request for a completion: messages, a system prompt and a token bound.
type SampleRequest = runtime.SampleRequest

// SampleMessage is one message of a sampling request or result.
type SampleMessage = runtime.SampleMessage

// SampleResult is the completion a Sampler returns.
type SampleResult = runtime.SampleResult

// AuthRequest describes what a token is for.
type AuthRequest struct {
	Tool, Task, Action, Event string
	// Subject is the end user the task acts for (TaskConfig.Subject), "" when none.
	Subject string
}

// AuthProvider supplies tokens for {auth.<provider>()} (SPEC §10). It must be safe for concurrent use.
type AuthProvider interface {
	Token(ctx context.Context, provider string, req AuthRequest) (string, error)
}

// Clock tells the time and makes timers; tests substitute a fake one (package tooltest).
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// Timer is a Clock's timer.
type Timer interface {
	// C delivers the time when the timer fires; it holds at most one unread firing.
	C() <-chan time.Time
	// Stop prevents the timer from firing and reports whether it was pending.
	Stop() bool
	// Reset makes the timer fire d from now, dropping an unread firing, and reports whether it was pending.
	Reset(d time.Duration) bool
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// NewTimer returns a real timer.
func (SystemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ t *time.Timer }

func (t systemTimer) C() <-chan time.Time { return t.t.C }

func (t systemTimer) Stop() bool { return t.t.Stop() }

func (t systemTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }

// Observer receives lifecycle facts (SPEC §11). Observe must not block for long.
type Observer interface {
	Observe(ctx context.Context, f Fact)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(ctx context.Context, f Fact)

// Observe calls f.
func (f ObserverFunc) Observe(ctx context.Context, fact Fact) { f(ctx, fact) }

// Fact is one lifecycle fact, such as "tool.catalog.resolved" or "tool.result". Package facts lists every name
// the library reports, as constants, with the keys of each fact's Data.
type Fact struct {
	Name   string
	Tool   string
	TaskID string
	CallID string
	Seq    uint64
	Time   time.Time
	// Data carries the fact's details; argument values in it are redacted.
	Data map[string]any
}

// CallObserver is an optional interface of an Observer (WithObserver). When the observer implements it, a task
// calls StartCall as each call begins, before its arguments are checked, and runs the call with the context it
// returns: the Approver, the backend and its outbound requests (an HTTP client instrumented with otelhttp, given
// with WithHTTPClient, finds the observer's span there), and the call's facts — tool.approval.requested,
// tool.approval.decided, tool.started, and exactly one of tool.result, tool.failed or tool.cancelled, which ends
// the call. The returned context must derive from ctx; a tracer puts its span in it (package oteltool does).
// StartCall must not block for long.
type CallObserver interface {
	StartCall(ctx context.Context, c CallStart) context.Context
}

// CallStart describes a call that begins.
type CallStart struct {
	Tool, TaskID, CallID string
	// Action is the manifest action ("" for a function the capability does not offer), Function the LLM-facing
	// name, Description the action's description.
	Action, Function, Description string
}

// Mux is where a Router registers its webhook endpoint; *http.ServeMux satisfies it.
type Mux interface {
	Handle(pattern string, h http.Handler)
}

// Sink receives activations (SPEC §10). An error means the activation was not accepted.
type Sink interface {
	Accept(ctx context.Context, a Activation) error
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(ctx context.Context, a Activation) error

// Accept calls f.
func (f SinkFunc) Accept(ctx context.Context, a Activation) error { return f(ctx, a) }
