// Package statefulsession is the stateful_session action backend (SPEC §7.4): a remote session created once per
// task, used by every call through {session.*}, and destroyed when the task ends. Importing the root package
// registers it.
//
// Actions that take create, extract and destroy from the top-level block share one session per task; an action
// that gives any of them itself has its own (Action.Session tells which). Initialize creates the session of the
// action that triggered it; other sessions are created on their first call, once however many calls arrive
// together. Teardown destroys them all.
//
// # Task state
//
// The backend keeps the sessions it still has to destroy in its task state slot (runtime.Init.State), saved after
// every create and every destroy, as JSON:
//
//	{"version": 1,
//	 "sessions": [{"key": "stateful_session", "created_at": "2026-11-02T10:00:00Z", "values": {"id": "s-1"}}]}
//
// key is the Action.Session of the actions using the session; values are what extract took from the create
// response (they may be tokens, so the store must protect them like secrets); created_at is RFC 3339 UTC. A
// session whose destroy failed stays listed. Records written by an earlier process (a host restart) are kept:
// Teardown destroys those whose key an action of the task used, and DestroyRecorded destroys them without
// creating anything.
package statefulsession

import (
	"context"
	"time"

	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/internal/httpspec"
	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/runtime"
	"github.com/commonagents-go/tool/runtime/statelesshttp"
)

// Kind is the execute-block key of this backend.
const Kind = "stateful_session"

func init() { runtime.Default().MustRegister(Backend{}) }

// Config is a stateful_session block, at action or top level.
type Config struct {
	Create  *httpspec.Request `json:"create,omitempty"`
	Extract map[string]string `json:"extract,omitempty"`
	Execute *Execute          `json:"execute,omitempty"`
	Destroy *httpspec.Request `json:"destroy,omitempty"`
	// Teardown is an accepted alias of Destroy.
	Teardown *httpspec.Request `json:"teardown,omitempty"`
	// Timeout bounds each HTTP call of the session (extension; default 30s).
	Timeout string `json:"timeout,omitempty"`
}

// Execute is the per-call request.
type Execute struct {
	httpspec.Request
	ResponsePath string `json:"response_path,omitempty"`
}

// Action is a prepared stateful_session action.
type Action struct {
	Create       *httpspec.Compiled
	Extract      map[string]*httpspec.Path
	Execute      *httpspec.Compiled
	ResponsePath *httpspec.Path
	Destroy      *httpspec.Compiled // nil when the session needs no explicit destroy
	Timeout      time.Duration
	// Session identifies the remote session the action uses, within a task: the field path of the block that
	// defines it. Actions taking create, extract and destroy all from the top-level block share its session
	// ("stateful_session"); an action giving any of them itself has a session of its own, keyed by its block
	// path (e.g. "actions[2].execute.stateful_session").
	Session string
}

// Traits derives catalog flags from the execute method.
func (a *Action) Traits() runtime.Traits {
	method := ""
	if a.Execute != nil {
		method = a.Execute.Method
	}
	t := statelesshttp.HTTPTraits(method)
	t.ConcurrencySafe = false // calls share one remote session
	return t
}

// Backend implements runtime.Runtime for stateful_session.
type Backend struct{}

// Kind returns "stateful_session".
func (Backend) Kind() string { return Kind }

// part is one of the session's requests, found in the action's block or else the shared one.
type part struct {
	req  *httpspec.Request
	path *field.Path
}

// Prepare decodes the action's block and the shared block, and compiles create, extract, execute and destroy.
func (Backend) Prepare(_ context.Context, b *runtime.Block) (runtime.Action, error) {
	var own, shared Config
	errs := b.Decode(&own)
	errs = append(errs, b.DecodeShared(&shared)...)
	errs = append(errs, aliases(b, &own, b.Path)...)
	errs = append(errs, aliases(b, &shared, b.SharedPath)...)

	pick := func(name string, a, s *httpspec.Request) part {
		if a != nil {
			return part{a, b.Path.Child(name)}
		}
		if s != nil {
			return part{s, b.SharedPath.Child(name)}
		}
		return part{}
	}
	a := &Action{Extract: map[string]*httpspec.Path{}, Session: b.SharedPath.String()}
	if own.Create != nil || own.Extract != nil || own.Destroy != nil || b.SharedPath == nil {
		a.Session = b.Path.String()
	}

	create := pick("create", own.Create, shared.Create)
	if create.req == nil {
		errs.Add(field.Required(b.Path.Child("create"), "a stateful_session needs a create request, in the action or the top-level stateful_session block"))
	} else {
		c, e := httpspec.Compile(b.Check, create.path, *create.req, httpspec.Defaults{}, runtime.ExecuteRoots...)
		errs = append(errs, e...)
		a.Create = c
	}

	extract, extractPath := own.Extract, b.Path.Child("extract")
	if extract == nil {
		extract, extractPath = shared.Extract, b.SharedPath.Child("extract")
	}
	for key, expr := range extract {
		x, e := httpspec.JSONPath(extractPath.Key(key), expr)
		errs.Add(e)
		a.Extract[key] = x
	}

	var exec *Execute
	execPath := b.Path.Child("execute")
	switch {
	case own.Execute != nil:
		exec = own.Execute
	case shared.Execute != nil:
		exec, execPath = shared.Execute, b.SharedPath.Child("execute")
	default:
		errs.Add(field.Required(execPath, "a stateful_session action needs an execute request"))
	}
	if exec != nil {
		c, e := httpspec.Compile(b.Check, execPath, exec.Request, httpspec.Defaults{}, runtime.SessionRoots...)
		errs = append(errs, e...)
		errs = append(errs, sessionKeys(execPath, c, extract)...)
		a.Execute = c
		if exec.ResponsePath != "" {
			x, e := httpspec.JSONPath(execPath.Child("response_path"), exec.ResponsePath)
			errs.Add(e)
			a.ResponsePath = x
		}
	}

	if destroy := pick("destroy", own.Destroy, shared.Destroy); destroy.req != nil {
		c, e := httpspec.Compile(b.Check, destroy.path, *destroy.req, httpspec.Defaults{}, runtime.SessionRoots...)
		errs = append(errs, e...)
		errs = append(errs, sessionKeys(destroy.path, c, extract)...)
		a.Destroy = c
	}

	timeout := own.Timeout
	tp := b.Path.Child("timeout")
	if timeout == "" {
		timeout, tp = shared.Timeout, b.SharedPath.Child("timeout")
	}
	d, e := httpspec.Duration(tp, timeout)
	errs.Add(e)
	a.Timeout = d
	return a, errs.Err()
}

// aliases folds teardown into destroy, refusing both at once.
func aliases(b *runtime.Block, c *Config, p *field.Path) field.List {
	if c.Teardown == nil {
		return nil
	}
	if c.Destroy != nil {
		return field.List{field.Duplicate(p.Child("teardown"), "destroy and its alias teardown are both given; keep one")}
	}
	b.Check.Warn(field.Invalid(p.Child("teardown"), "teardown is a legacy alias of destroy"))
	c.Destroy, c.Teardown = c.Teardown, nil
	return nil
}

// sessionKeys checks that every {session.x} names a key the extract block produces.
func sessionKeys(p *field.Path, c *httpspec.Compiled, extract map[string]string) field.List {
	var errs field.List
	for _, r := range c.Refs() {
		if r.Root != interp.RootSession || len(r.Steps) == 0 {
			continue
		}
		if _, ok := extract[r.Steps[0].Name]; !ok {
			errs.Add(field.Invalid(p, "{%s} is not extracted from the create response (extract declares no %q)",
				r.Text, r.Steps[0].Name))
		}
	}
	return errs
}

var (
	_ runtime.Runtime   = Backend{}
	_ runtime.Describer = (*Action)(nil)
)

// ValidateShared decodes the top-level stateful_session block strictly once, whether or not an action uses it;
// its requests are compiled by Prepare for each action that uses it.
func (Backend) ValidateShared(_ context.Context, b *runtime.Block) error {
	var shared Config
	return b.DecodeShared(&shared).Err()
}

var _ runtime.SharedValidator = Backend{}
