// Package subprocess is the exec action backend (SPEC §7.8, our extension): a tool implemented by a local program
// speaking JSON on stdin/stdout, one process per call (oneshot) or one long-lived JSON-RPC process per task
// (server). This package validates the blocks; running processes arrives with the exec work. Importing the root
// package registers it.
package subprocess

import (
	"context"
	"regexp"
	"time"

	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/runtime"
)

// Kind is the execute-block key of this backend.
const Kind = "exec"

// The process models.
const (
	ModeOneshot = "oneshot"
	ModeServer  = "server"
)

func init() { runtime.Default().MustRegister(Backend{}) }

// Config is an exec block, at action or top level; action fields override the top-level ones.
type Config struct {
	Command string   `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	// Env lists the names of host environment variables forwarded to the process; nothing else is inherited
	// except PATH and HOME.
	Env       []string `json:"env,omitempty"`
	TimeoutMS *int64   `json:"timeout_ms,omitempty"`
	Runtime   string   `json:"runtime,omitempty"`
	Dir       string   `json:"dir,omitempty"`
}

// Action is a prepared exec action.
type Action struct {
	Command *interp.Template
	Args    []*interp.Template
	Env     []string
	Timeout time.Duration // 0 = the host default
	Mode    string
	Dir     string
}

// Traits reports a local process: unknown effects, treated as destructive.
func (a *Action) Traits() runtime.Traits {
	return runtime.Traits{Owner: "subprocess", Destructive: true, Capabilities: []string{"shell"}}
}

// Backend implements runtime.Runtime for exec.
type Backend struct{}

// Kind returns "exec".
func (Backend) Kind() string { return Kind }

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Prepare merges the action's block over the shared one and checks it.
func (Backend) Prepare(_ context.Context, b *runtime.Block) (runtime.Action, error) {
	var own, shared Config
	errs := b.Decode(&own)
	errs = append(errs, b.DecodeShared(&shared)...)
	cfg, p := merge(own, shared), func(name string, set bool) *field.Path {
		if set {
			return b.Path.Child(name)
		}
		return b.SharedPath.Child(name)
	}
	a := &Action{Env: cfg.Env, Mode: cfg.Runtime, Dir: cfg.Dir}
	if a.Mode == "" {
		a.Mode = ModeOneshot
	}
	roots := runtime.ExecuteRoots
	if cfg.Command == "" {
		errs.Add(field.Required(b.Path.Child("command"), "command is required"))
	} else {
		t, e := b.Check.Template(p("command", own.Command != ""), cfg.Command, roots...)
		errs = append(errs, e...)
		a.Command = t
	}
	argsPath := p("args", own.Args != nil)
	for i, arg := range cfg.Args {
		t, e := b.Check.Template(argsPath.Index(i), arg, roots...)
		errs = append(errs, e...)
		a.Args = append(a.Args, t)
	}
	envPath := p("env", own.Env != nil)
	for i, name := range cfg.Env {
		if !envName.MatchString(name) {
			errs.Add(field.Invalid(envPath.Index(i), "%q is not an environment variable name (env lists names; values are read from the host)", name))
		}
	}
	if cfg.TimeoutMS != nil {
		if *cfg.TimeoutMS <= 0 {
			errs.Add(field.Invalid(p("timeout_ms", own.TimeoutMS != nil), "timeout_ms must be greater than zero"))
		} else {
			a.Timeout = time.Duration(*cfg.TimeoutMS) * time.Millisecond
		}
	}
	if a.Mode != ModeOneshot && a.Mode != ModeServer {
		errs.Add(field.Unsupported(p("runtime", own.Runtime != ""), "unsupported runtime %q (use oneshot or server)", a.Mode))
	}
	return a, errs.Err()
}

func merge(own, shared Config) Config {
	if own.Command == "" {
		own.Command = shared.Command
	}
	if own.Args == nil {
		own.Args = shared.Args
	}
	if own.Env == nil {
		own.Env = shared.Env
	}
	if own.TimeoutMS == nil {
		own.TimeoutMS = shared.TimeoutMS
	}
	if own.Runtime == "" {
		own.Runtime = shared.Runtime
	}
	if own.Dir == "" {
		own.Dir = shared.Dir
	}
	return own
}

// Initialize is not built yet: execution arrives with the exec work.
func (Backend) Initialize(context.Context, *runtime.Init) (runtime.Instance, error) {
	return nil, runtime.ErrNotImplemented
}

var (
	_ runtime.Runtime   = Backend{}
	_ runtime.Describer = (*Action)(nil)
)

// ValidateShared decodes the top-level exec block strictly once, whether or not an action uses it.
func (Backend) ValidateShared(_ context.Context, b *runtime.Block) error {
	var shared Config
	return b.DecodeShared(&shared).Err()
}

var _ runtime.SharedValidator = Backend{}
