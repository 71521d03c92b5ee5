package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/runtime"
)

// call is the bookkeeping of one Invoke: its result under construction, its facts and the failure counter.
type call struct {
	task   *Task
	a      *action
	id     string
	ctx    context.Context
	run    context.Context // the backend's context, once made: its cause tells an interrupt from a timeout
	sent   bool            // the backend has the call: it may have reached the server
	result *Result
	values *callValues // the call's template values, once made (&vals); they hold its derived secrets

	vals        callValues   // allocated with the call
	backendCall runtime.Call // what the backend gets
	res         Result       // what result points to: allocated with the call
	secrets     callSecrets  // what vals.derived points to once the call resolves a secret
}

func (t *Task) newCall(ctx context.Context, a *action, function string) *call {
	id := t.nextCallID(ctx)
	ctx = t.startCall(ctx, a, id, function)
	c := &call{task: t, a: a, id: id, ctx: ctx, res: Result{
		CallID: id, Action: a.def.Name, Function: function,
		Telemetry: Telemetry{Start: t.tool.opts.clock.Now(), Backend: a.kind, Attempts: 1},
	}}
	c.result = &c.res
	return c
}

// finish completes a call that produced a backend result (rr, nil when the pipeline refused the call) or a
// recoverable error (te). Everything in the Result is scrubbed of secrets.
func (c *call) finish(rr *runtime.Result, te *ToolError) *Result {
	t, r := c.task, c.result
	r.Telemetry.Duration = t.tool.opts.clock.Now().Sub(r.Telemetry.Start)
	var output any
	if rr != nil {
		output, r.ServerData = rr.Output, rr.ServerData
		r.Telemetry.BytesIn, r.Telemetry.BytesOut = rr.BytesIn, rr.BytesOut
		if rr.Attempts > 0 {
			r.Telemetry.Attempts = rr.Attempts
		}
		if r.ServerData != nil {
			r.ServerData, _ = c.scrub(r.ServerData).(map[string]any)
		}
		r.Content = c.scrubContent(rr.Content)
	}
	if te != nil {
		if d := c.derived(); d != nil {
			d.mu.Lock()
			te = scrubToolError(&d.masks, te)
			d.mu.Unlock()
		}
		te = t.scrubToolError(te)
		r.IsError, r.Error = true, te
		output = map[string]any{"error": te}
		t.failures.Add(1)
	} else {
		output = c.scrub(output)
		t.failures.Store(0)
	}
	c.setOutput(output)
	if t.observing() {
		name, data := facts.ToolResult, map[string]any{"action": c.a.def.Name, "output_bytes": r.OutputBytes,
			"duration_ms": r.Telemetry.Duration.Milliseconds()}
		if te != nil {
			name, data["error"] = facts.ToolFailed, te
		}
		t.observe(c.ctx, name, c.id, data)
	}
	return r
}

// setOutput encodes the output once; past the host's result budget it moves to ServerData["output"].
func (c *call) setOutput(output any) {
	r := c.result
	b, err := encodeJSON(output)
	if err != nil {
		te := &ToolError{Kind: runtime.KindMalformedResponse, Message: "the output is not representable as JSON"}
		r.IsError, r.Error, output = true, te, map[string]any{"error": te}
		b, _ = encodeJSON(output)
	}
	r.Output, r.OutputJSON, r.OutputBytes = output, b, len(b)
	if budget := c.task.tool.opts.limits.ResultBytes; budget > 0 && len(b) > budget && !r.IsError {
		if r.ServerData == nil {
			r.ServerData = map[string]any{}
		}
		r.ServerData["output"] = output
		r.Omitted = true
		r.OmittedReason = fmt.Sprintf("the output is %d bytes, over the result budget of %d bytes", len(b), budget)
		r.Output = map[string]any{"omitted": r.OmittedReason}
		r.OutputJSON, _ = encodeJSON(r.Output)
	}
}

// fail ends a call with an unrecoverable error, reported as tool.failed and returned scrubbed.
func (c *call) fail(err error) error {
	t := c.task
	t.failures.Add(1)
	if d := c.derived(); d != nil {
		d.mu.Lock()
		err = d.masks.Error(err, ErrUnrecoverable, context.Canceled, context.DeadlineExceeded)
		d.mu.Unlock()
	}
	err = t.secrets.Error(fmt.Errorf("tool: call %s (%s): %w", c.id, c.a.def.Name, err), ErrUnrecoverable)
	t.observe(c.ctx, facts.ToolFailed, c.id, map[string]any{"action": c.a.def.Name, "error": err.Error(), "unrecoverable": true})
	return err
}

func (t *Task) scrubToolError(e *ToolError) *ToolError {
	if t.secrets.Empty() {
		return e
	}
	return scrubToolError(t.secrets, e)
}

// secretScrubber masks secrets: a task's *redact.Set or a call's *redact.List.
type secretScrubber interface {
	Replace(text string) string
	Value(v any) any
}

// scrubToolError returns e with the secrets of set masked; e is never modified.
func scrubToolError(set secretScrubber, e *ToolError) *ToolError {
	if e == nil {
		return e
	}
	out := *e
	out.Message = set.Replace(e.Message)
	out.Cause = scrubToolError(set, e.Cause)
	if e.Hint != nil {
		h := *e.Hint
		h.Message = set.Replace(h.Message)
		h.ExampleInput, _ = set.Value(h.ExampleInput).(map[string]any)
		out.Hint = &h
	}
	return &out
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// encodeJSON encodes v compactly without HTML escaping.
func encodeJSON(v any) ([]byte, error) {
	if s, ok := v.(string); ok && plainASCII(s) { // a common output: quoted as it is
		return append(append(append(make([]byte, 0, len(s)+2), '"'), s...), '"'), nil
	}
	buf := bufPool.Get().(*bytes.Buffer)
	defer bufPool.Put(buf)
	buf.Reset()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.Clone(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

// plainASCII reports whether s is printable ASCII that JSON quotes without escaping anything.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// ID returns the call's ID.
func (c *Call) ID() string { return c.id }

// Wait returns the call's Result and error, as Invoke would, once it finished; ctx bounds only the waiting.
func (c *Call) Wait(ctx context.Context) (*Result, error) {
	select {
	case <-c.done:
		return c.result, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Cancel cancels the call; Wait then returns the cancellation. The task reports a tool.cancelled fact.
func (c *Call) Cancel() { c.cancel() }

// Start begins a call and returns at once (SPEC §11). For a tool with synchronous: true it runs the call to the
// end first, as Invoke. The call runs until it finishes, Cancel is called, ctx ends or the task closes; Close
// waits for it. Start fails only as Invoke fails before running (ErrUnknownAction, ErrClosed).
func (t *Task) Start(ctx context.Context, action string, args map[string]any) (*Call, error) {
	a := t.tool.actionByName[action]
	if a == nil || !t.cfg.Capability.includes(action) {
		return nil, fmt.Errorf("%w %q", ErrUnknownAction, action)
	}
	if err := t.enter(); err != nil {
		return nil, err
	}
	id := t.nextCallID(ctx)
	cctx, cancel := context.WithCancel(ContextWithCallID(ctx, id))
	c := &Call{id: id, cancel: cancel, done: make(chan struct{})}
	run := func() {
		defer t.leave()
		defer close(c.done)
		defer cancel()
		c.result, c.err = t.invoke(cctx, a, t.tool.functionName(t.cfg.Capability, a), args)
	}
	if t.tool.manifest.Synchronous {
		run()
	} else {
		go run()
	}
	return c, nil
}
