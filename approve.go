package tool

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/runtime"
)

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

// approves reports whether calls of the named action need approval.
func (c Capability) approves(action string) bool {
	return slices.Contains(c.Approve, "*") || slices.Contains(c.Approve, action)
}

// checkApproval checks Capability.Approve against the tool's actions and the task's Approver.
func (t *Tool) checkApproval(cfg TaskConfig) []Problem {
	var errs field.List
	root := field.NewPath("approve")
	for i, name := range cfg.Capability.Approve {
		if name != "*" && t.actionByName[name] == nil {
			names := make([]string, 0, len(t.actions))
			for _, a := range t.actions {
				names = append(names, a.def.Name)
			}
			errs.Add(field.Invalid(root.Index(i), "%q names no action of the tool (actions: %s; \"*\" means all)",
				name, strings.Join(names, ", ")))
		}
	}
	if len(cfg.Capability.Approve) > 0 && cfg.Approver == nil {
		errs.Add(field.Required(field.NewPath("approver"),
			"the capability marks actions for approval (approve), so the task needs an Approver"))
	}
	return problemsOf(errs)
}

// approval asks the task's Approver about a call whose arguments resolved. It returns done == false when the
// call may run; otherwise the call ends with res and err: a denied result, or the ending of a cancelled call.
func (t *Task) approval(c *call, resolved map[string]any) (res *Result, err error, done bool) {
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	stop := context.AfterFunc(t.ctx, cancel) // Close ends the wait
	defer stop()
	req := ApprovalRequest{TaskID: t.id, CallID: c.id, Action: c.a.def.Name, Function: c.result.Function,
		Traits: c.a.traits()}
	req.Arguments, _ = t.secrets.Value(t.redactArgs(resolved)).(map[string]any)
	t.observe(c.ctx, facts.ApprovalRequested, c.id, map[string]any{"action": req.Action, "function": req.Function,
		"arguments": req.Arguments})

	ap, err := askApprover(ctx, t.cfg.Approver, req)
	decided := map[string]any{"action": req.Action, "approved": err == nil && ap.Approved, "by": ap.By}
	if ap.Reason != "" {
		decided["reason"] = ap.Reason
	}
	if err != nil {
		decided["error"] = err.Error()
	}
	t.observe(c.ctx, facts.ApprovalDecided, c.id, decided)
	if err == nil && ap.Approved {
		return nil, nil, false
	}
	if c.ctx.Err() != nil || t.ctx.Err() != nil {
		res, err = c.interrupted(c.ctx, ctx.Err())
		return res, err, true
	}
	if max := t.tool.opts.limits.MaxCalls; max > 0 {
		t.callCount.Add(-1) // a call that never ran does not use up the task's calls
	}
	te := &ToolError{Kind: runtime.KindDenied, Message: "the call was denied"}
	switch {
	case err != nil:
		te.Message, te.Retryable = "the call was not run: approval could not be obtained", true
	case ap.Reason != "":
		te.Message += ": " + ap.Reason
	}
	approvalData := map[string]any{"approved": false, "by": ap.By, "reason": ap.Reason}
	c.result.ServerData = map[string]any{"approval": t.secrets.Value(approvalData)}
	return c.finish(nil, te), nil, true
}

// askApprover calls the Approver; a panic is an error without its value, which could hold a secret.
func askApprover(ctx context.Context, a Approver, r ApprovalRequest) (ap Approval, err error) {
	defer func() {
		if p := recover(); p != nil {
			ap, err = Approval{}, fmt.Errorf("approver panicked")
		}
	}()
	return a.Approve(ctx, r)
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
