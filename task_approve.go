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
