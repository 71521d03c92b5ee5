package tool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/internal/jsonvalue"
	"github.com/commonagents-go/tool/runtime"
)

type callIDKey struct{}

type callObserverKey struct{}

// Invoke runs one call of the named action (SPEC §3.4, §7, §8). args are the LLM's arguments as decoded JSON;
// bound parameters always win over them, defaults fill the rest.
//
// A failure the LLM can correct or retry — bad or missing arguments, an HTTP error status, a timeout of this call
// — is a Result with IsError set and a nil error. A non-nil error is one of: ErrUnknownAction (no such action
// in the capability), ErrClosed, the ctx's error when the caller cancelled the call, or an error satisfying
// errors.Is(err, ErrUnrecoverable), after which the host should close the task. Invoke is safe for concurrent
// use; read-only calls run in parallel, others one at a time (SPEC §11). ctx bounds the call.
func (t *Task) Invoke(ctx context.Context, action string, args map[string]any) (*Result, error) {
	a := t.tool.actionByName[action]
	if a == nil || !t.cfg.Capability.includes(action) {
		return nil, fmt.Errorf("%w %q", ErrUnknownAction, action)
	}
	return t.invoke(ctx, a, t.tool.functionName(t.cfg.Capability, a), args)
}

// InvokeFunction is Invoke by LLM-facing function name (Tool.Functions), with the arguments as the LLM's JSON
// text. It handles the LLM's mistakes as results it can correct: arguments that are not a JSON object are a
// recoverable invalid_arguments result, and a function the capability does not offer (a hallucinated name) is a
// recoverable runtime.KindUnknownFunction result whose output lists the functions the LLM can call. Its errors are
// otherwise those of Invoke.
func (t *Task) InvokeFunction(ctx context.Context, function string, argsJSON []byte) (*Result, error) {
	a := t.functions[function]
	if a == nil {
		return t.unknownFunction(ctx, function)
	}
	var args map[string]any
	if len(bytes.TrimSpace(argsJSON)) > 0 {
		v, err := jsonvalue.Decode(argsJSON)
		obj, isObject := v.(map[string]any)
		if err != nil || !isObject && v != nil {
			return t.rejected(ctx, a, function, &ToolError{Kind: runtime.KindInvalidArguments,
				Message: "arguments must be a JSON object", Hint: &RetryHint{Message: "send the arguments as one JSON object"}})
		}
		args = obj
	}
	return t.invoke(ctx, a, function, args)
}

// rejected reports a call refused before it reached the pipeline.
func (t *Task) rejected(ctx context.Context, a *action, function string, te *ToolError) (*Result, error) {
	if err := t.enter(); err != nil {
		return nil, err
	}
	defer t.leave()
	c := t.newCall(ctx, a, function)
	return c.finish(nil, te), nil
}

func (t *Task) invoke(ctx context.Context, a *action, function string, args map[string]any) (*Result, error) {
	if err := t.enter(); err != nil {
		return nil, err
	}
	defer t.leave()
	c := t.newCall(ctx, a, function)
	ctx = c.ctx // a CallObserver's context, holding its span

	if max := t.tool.opts.limits.MaxCalls; max > 0 && t.callCount.Add(1) > int64(max) {
		return nil, c.fail(runtime.Unrecoverable(fmt.Errorf("the task reached its limit of %d calls", max)))
	}
	if max := t.tool.opts.limits.MaxConsecutiveErrors; max > 0 && t.failures.Load() >= int64(max) {
		t.failures.Add(-1) // the refusal itself is not one more failure
		return c.finish(nil, &ToolError{Kind: runtime.KindDenied, Message: fmt.Sprintf(
			"the last %d calls failed; the task allows no more calls", max)}), nil
	}
	resolved, ignored, te := t.resolveArgs(a, args)
	c.result.Telemetry.IgnoredArguments = ignored
	if te != nil {
		return c.finish(nil, te), nil
	}
	t.addSecretArgs(resolved)
	if t.cfg.Capability.approves(a.def.Name) {
		if res, err, done := t.approval(c, resolved); done {
			return res, err
		}
	}
	// The allow list grows before the backend runs, so an event the call causes routes even if it arrives
	// before the response (SPEC §6).
	if err := t.grow(ctx, c.id, resolved); err != nil { // store mode only: the routes or the list not stored
		return c.finish(nil, &ToolError{Kind: runtime.KindUnavailable, Message: "the task's state could not be stored",
			Hint: &RetryHint{Message: "retry the call"}}), nil
	}
	if t.cfg.Capability.approves(a.def.Name) {
		t.events.touch() // after the approval's wait
	} else {
		t.events.touchAt(c.res.Telemetry.Start) // the clock was read at the call's start, a moment ago
	}
	if t.observing() {
		t.observe(ctx, facts.ToolStarted, c.id, map[string]any{"action": a.def.Name, "arguments": t.redactArgs(resolved)})
	}

	return t.run(ctx, c, a, resolved)
}

// run runs the call on its backend, once its arguments are resolved and it is approved.
//
// The call's context ends when the task closes: Close cancels it through the registry. For a backend that states
// the bound of its calls (runtime.Bounded), it is made once the call no longer waits (for the gate, for its
// backend) and carries that bound, so that the backend needs no context of its own; otherwise it is made first,
// with the host's time limit and the interruption the call may have. stop is the context whose end stops the
// call from outside (its caller, Close, the host's limit, an interruption), not by its own bound. What the call
// holds is released by one deferred callEnd, so that the defer stays open-coded.
func (t *Task) run(ctx context.Context, c *call, a *action, resolved map[string]any) (*Result, error) {
	end := callEnd{task: t, shared: a.shared}
	defer end.run()
	bound := a.bound
	callCtx, stop := ctx, ctx
	if bound == 0 {
		callCtx, end.cancel = context.WithCancel(ctx)
		end.tracked = t.track(end.cancel)
		if d := t.tool.opts.limits.ActionTimeouts[a.def.Name]; d > 0 {
			callCtx, end.cancelT = context.WithTimeout(callCtx, d)
		}
		if a.cancelOnInterrupt {
			callCtx, end.cancelCause = context.WithCancelCause(callCtx)
			end.uninterruptible = t.events.interruptible(end.cancelCause)
		}
		c.run, stop = callCtx, callCtx
	}

	if err := t.gate.acquire(callCtx, t.ctx.Done(), a.shared); err != nil {
		return c.interrupted(ctx, err)
	}
	end.gated = true

	c.secrets.task = t
	c.vals = callValues{ctx: callCtx, task: t, action: a.def.Name, args: resolved, encoded: true, spare: &c.secrets}
	c.values = &c.vals
	c.backendCall = runtime.Call{ID: c.id, Action: a.def.Name, Args: resolved, Idempotent: a.retrySafe, Values: c.values}
	call := &c.backendCall
	inst, err := t.instance(callCtx, a, call)
	if err != nil {
		if errors.Is(err, ErrClosed) {
			t.observe(ctx, facts.ToolCancelled, c.id, map[string]any{"action": a.def.Name, "reason": "task closed"})
			return nil, ErrClosed
		}
		if callCtx.Err() != nil && !errors.Is(err, ErrUnrecoverable) {
			return c.interrupted(ctx, err)
		}
		return nil, c.fail(runtime.Unrecoverable(err))
	}
	if bound > 0 {
		callCtx, end.cancel = context.WithTimeout(ctx, bound)
		end.tracked = t.track(end.cancel)
		c.vals.ctx, call.Bounded = callCtx, true
	}
	c.sent = true
	rr, err := invokeBackend(callCtx, inst, a, call)
	if err != nil {
		if re, ok := errors.AsType[*runtime.Error](err); ok && !errors.Is(err, ErrUnrecoverable) {
			rr, err = runtime.Fail(re), nil
		}
	}
	if err != nil {
		if (stop.Err() != nil || t.ctx.Err() != nil) && !errors.Is(err, ErrUnrecoverable) {
			return c.interrupted(ctx, err)
		}
		return nil, c.fail(runtime.Unrecoverable(err))
	}
	if rr == nil {
		return nil, c.fail(runtime.Unrecoverable(fmt.Errorf("backend %s returned no result", a.kind)))
	}
	return c.finish(rr, toolError(rr.Error, a.retrySafe)), nil
}

// callEnd is what a running call holds, released when it ends, in this order: its gate, its interruptibility, its
// contexts, its registration for Close.
type callEnd struct {
	task            *Task
	shared, gated   bool
	uninterruptible func()
	cancelCause     context.CancelCauseFunc
	cancelT         context.CancelFunc
	tracked         uint64 // the registry's id; 0 for none
	cancel          context.CancelFunc
}

func (e *callEnd) run() {
	if e.gated {
		e.task.gate.release(e.shared)
	}
	if e.uninterruptible != nil {
		e.uninterruptible()
	}
	if e.cancelCause != nil {
		e.cancelCause(nil)
	}
	if e.cancelT != nil {
		e.cancelT()
	}
	if e.tracked != 0 {
		e.task.untrack(e.tracked)
	}
	if e.cancel != nil {
		e.cancel()
	}
}

// boundOf is the bound of a's calls when its backend states it (runtime.Bounded) and the call needs no context of
// the task's own (no host time limit for the action, no cancellation on interrupt); else 0.
func (t *Tool) boundOf(a *action) time.Duration {
	b, ok := a.prepared.(runtime.Bounded)
	if !ok || a.cancelOnInterrupt || t.opts.limits.ActionTimeouts[a.def.Name] > 0 {
		return 0
	}
	return b.CallTimeout(t.opts.runtimeLimits())
}

// invokeBackend calls the backend; a panic becomes an unrecoverable error without its value, which could hold a
// secret (SPEC §12.2).
func invokeBackend(ctx context.Context, inst runtime.Instance, a *action, call *runtime.Call) (rr *runtime.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			rr, err = nil, runtime.Unrecoverable(fmt.Errorf("backend %s panicked", a.kind))
		}
	}()
	return inst.Invoke(ctx, a.prepared, call)
}

// addSecretArgs adds the values of secret parameters (format: password, writeOnly) to the task's secrets, so a
// server that echoes one cannot leak it through a result, error or fact.
func (t *Task) addSecretArgs(resolved map[string]any) {
	for name := range t.tool.secretParams {
		if v, ok := resolved[name]; ok && v != nil {
			t.secrets.Add(textOf(v))
		}
	}
}

// interrupted ends a call stopped by its context: the caller's cancellation is returned as ctx's error, the
// task's closing as ErrClosed, Task.Interrupt as ErrInterrupted, and a host per-action timeout as a recoverable
// timeout result, whose outcome is unknown once the backend had the call.
func (c *call) interrupted(ctx context.Context, err error) (*Result, error) {
	t := c.task
	switch {
	case ctx.Err() != nil:
		t.observe(ctx, facts.ToolCancelled, c.id, map[string]any{"action": c.a.def.Name, "reason": ctx.Err().Error()})
		return nil, fmt.Errorf("tool: call %s: %w", c.id, ctx.Err())
	case t.ctx.Err() != nil:
		t.observe(ctx, facts.ToolCancelled, c.id, map[string]any{"action": c.a.def.Name, "reason": "task closed"})
		return nil, ErrClosed
	case c.run != nil && errors.Is(context.Cause(c.run), ErrInterrupted):
		t.observe(ctx, facts.ToolCancelled, c.id, map[string]any{"action": c.a.def.Name, "reason": "task interrupted"})
		return nil, fmt.Errorf("tool: call %s: %w", c.id, ErrInterrupted)
	}
	e := runtime.Errorf(runtime.KindTimeout, "the call exceeded the host's time limit for %s", c.a.def.Name)
	if c.sent {
		e = runtime.LostReply(runtime.KindTimeout, "the call exceeded the host's time limit for %s", c.a.def.Name)
	}
	return c.finish(nil, toolError(e, c.a.retrySafe)), nil
}

// redactArgs returns args for facts: secret parameters' values masked.
func (t *Task) redactArgs(args map[string]any) map[string]any {
	if len(t.tool.secretParams) == 0 {
		return args
	}
	out := make(map[string]any, len(args))
	for k, v := range args {
		if t.tool.secretParams[k] {
			v = "[redacted]"
		}
		out[k] = v
	}
	return out
}

// grow adds a call's resolved arguments to the allow list and persists it when it changed.
func (t *Task) grow(ctx context.Context, callID string, resolved map[string]any) error {
	if t.tool.routing != nil {
		return t.growRouted(ctx, callID, resolved)
	}
	changed, evicted := t.allow.AddAll(resolved)
	if !changed {
		return nil
	}
	t.reportGrowth(ctx, callID, resolved, evicted)
	if err := t.saveAllowList(ctx); err != nil {
		t.storeFailed(ctx, "write", recordAllowList, err)
	}
	return nil
}

// reportGrowth reports the values the caps evicted and tells the watchers, before the backend runs, like the
// growth itself.
func (t *Task) reportGrowth(ctx context.Context, callID string, resolved map[string]any, evicted map[string][]string) {
	for name, values := range evicted {
		t.observe(ctx, facts.AllowListEvicted, callID, map[string]any{"parameter": name, "count": len(values)})
	}
	t.notifyGrown(resolved, evicted)
}

// nextCallID returns the call's ID from ctx (ContextWithCallID) or a new one.
func (t *Task) nextCallID(ctx context.Context) string {
	if id, ok := ctx.Value(callIDKey{}).(string); ok && id != "" {
		return id
	}
	var b [32]byte
	return string(strconv.AppendUint(append(b[:0], "call_"...), t.callSeq.Add(1), 10))
}
