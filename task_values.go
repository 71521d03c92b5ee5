package tool

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/runtime"
)

// taskValues are the template roots that stay the same for every call of a task.
type taskValues struct {
	runtime map[string]any
	agent   map[string]any
	mount   map[string]any // nil when the host configured no mount
}

func newTaskValues(t *Task) taskValues {
	v := taskValues{runtime: t.tool.runtimeValues()}
	if a := t.cfg.Agent; a.Name != "" || a.Namespace != "" { // else the shared empty agent
		v.agent = map[string]any{"name": a.Name, "namespace": a.Namespace}
	} else {
		v.agent = noAgent
	}
	if m := t.cfg.Mount; m != nil {
		v.mount = map[string]any{"bucket": m.Bucket, "prefix": m.Prefix, "backend": m.Backend}
	}
	return v
}

// noAgent is the agent root of a task whose configuration names no agent; read only.
var noAgent = map[string]any{"name": "", "namespace": ""}

// runtimeValues returns the runtime template root, which is the same for every task of the tool: built once and
// shared, read only.
func (t *Tool) runtimeValues() map[string]any {
	t.runtimeOnce.Do(func() {
		info := t.opts.info
		t.runtimeRoot = map[string]any{"version": info.Version, "api_root": info.APIRoot, "dashboard_url": info.DashboardURL}
	})
	return t.runtimeRoot
}

// callValues resolves the template roots of one call (runtime.Call.Values): everything but session, which the
// stateful_session backend answers itself. A root with no steps resolves to the whole root object.
type callValues struct {
	ctx    context.Context
	task   *Task
	action string // the action of a call, or "" for an event's requests
	event  string // the event of a subscription's or poll's requests
	args   map[string]any
	// encoded turns on the call's derived secrets (task_call_secrets.go): set for Invoke's calls.
	encoded bool
	derived atomic.Pointer[callSecrets]
	spare   *callSecrets // storage for derived, allocated with the call; nil when none
}

// Resolve implements interp.Resolver.
func (v *callValues) Resolve(ref interp.Ref) (any, error) {
	val, err := v.resolve(ref)
	if v.encoded && err == nil {
		v.noteSecret(val)
	}
	return val, err
}

func (v *callValues) resolve(ref interp.Ref) (any, error) {
	t := v.task
	switch ref.Root {
	case interp.RootParameters:
		return lookup(v.args, ref.Steps), nil
	case interp.RootSettings:
		return t.tool.setting(ref)
	case interp.RootRuntime:
		return lookup(t.values.runtime, ref.Steps), nil
	case interp.RootAgent:
		return lookup(t.values.agent, ref.Steps), nil
	case interp.RootContext:
		return lookup(t.cfg.Context, ref.Steps), nil
	case interp.RootMount:
		if t.values.mount == nil {
			return nil, runtime.Unrecoverable(fmt.Errorf("{%s}: the task has no mount", ref.Text))
		}
		return lookup(t.values.mount, ref.Steps), nil
	case interp.RootAuth:
		return v.token(ref)
	}
	return nil, runtime.Unrecoverable(fmt.Errorf("{%s}: %s values are not available here", ref.Text, ref.Root))
}

// token fetches a token from the host's AuthProvider (SPEC §4.2, §12.2). No provider is a configuration error;
// a provider that fails leaves the request unsent, as a retryable error. Every token joins the task's secrets.
func (v *callValues) token(ref interp.Ref) (any, error) {
	if len(ref.Steps) == 0 {
		return nil, runtime.Unrecoverable(fmt.Errorf("{%s}: no auth provider named", ref.Text))
	}
	provider := ref.Steps[0].Name
	auth := v.task.tool.opts.auth
	if auth == nil {
		return nil, runtime.Unrecoverable(fmt.Errorf("{%s}: no auth provider is configured (tool.WithAuth)", ref.Text))
	}
	ctx := v.ctx
	if _, ok := ctx.Deadline(); !ok { // a resolver kept for later (a session's destroy) has no deadline of its own
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, v.task.tool.opts.limits.CallTimeout)
		defer cancel()
	}
	tok, err := auth.Token(ctx, provider, AuthRequest{Tool: v.task.tool.Name(), Task: v.task.id, Action: v.action, Event: v.event,
		Subject: v.task.cfg.Subject})
	if err == nil && tok == "" {
		err = fmt.Errorf("empty token")
	}
	if err != nil {
		v.task.logger().Warn("auth token unavailable", "tool", v.task.tool.Name(), "task", v.task.id,
			"provider", provider, "error", err)
		e := runtime.Errorf(runtime.KindUnavailable, "could not get a token from auth provider %q", provider)
		return nil, e
	}
	v.task.secrets.AddToken(tok)
	return tok, nil
}

func lookup(root map[string]any, steps []interp.Step) any {
	if len(steps) == 0 {
		if root == nil {
			return nil
		}
		return root
	}
	v, _ := interp.Lookup(root, steps)
	return v
}

// setting resolves {settings.*}: the longest dotted prefix of the steps that is a settings key wins (SPEC §3.2),
// so {settings.github.token} reads the key "github.token". A setting with no value, when the manifest declares no
// settings schema, is a configuration error (SPEC §2).
func (t *Tool) setting(ref interp.Ref) (any, error) {
	steps := ref.Steps
	if len(steps) == 0 {
		return nil, runtime.Unrecoverable(fmt.Errorf("{%s}: name a setting", ref.Text))
	}
	if v, ok := t.settings[steps[0].Name]; ok && len(steps) == 1 {
		return v, nil // the common case, without building keys
	}
	for n := len(steps); n > 0; n-- {
		key, ok := dotted(steps[:n])
		if !ok {
			continue
		}
		if v, ok := t.settings[key]; ok {
			rest, _ := interp.Lookup(v, steps[n:])
			return rest, nil
		}
	}
	if t.settingsSchema != nil {
		return nil, nil // declared (Load checked) and optional without a default
	}
	return nil, runtime.Unrecoverable(fmt.Errorf("{%s}: the setting is not configured (tool.WithSettings)", ref.Text))
}

// dotted joins name steps with dots; it reports false when a step is an index.
func dotted(steps []interp.Step) (string, bool) {
	var b strings.Builder
	for i, s := range steps {
		if s.IsIndex {
			return "", false
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.Name)
	}
	return b.String(), true
}
