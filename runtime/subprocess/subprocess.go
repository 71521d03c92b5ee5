// Package subprocess is the exec action backend (SPEC §7.8, our extension): a tool implemented by a local program
// speaking JSON on stdin/stdout, one process per call (oneshot) or one long-lived JSON-RPC process per task
// (server). Importing the root package registers it.
//
// # Oneshot
//
// Each call starts the command with {"args": {...}} on stdin and reads one JSON object from stdout:
// {"result": v} makes v the output, {"error": "..."} a recoverable tool_error, {"pending": {...}} an output
// {"pending": {...}} with ServerData["status"] = "pending"; a key whose value is null counts as absent. Empty or
// non-JSON stdout, a non-zero exit, a timeout or
// stdout over the response limit are recoverable errors; the last line of stderr goes into the message and the
// last StderrBytes of it into ServerData["stderr"].
//
// # Server
//
// The action's process starts at Initialize (or at its action's first call) and lives for the task. Each call is
// one line {"jsonrpc":"2.0","id":N,"method":"execute","params":{"args":{...}}} on its stdin; the reply line with
// the same id gives the output (result) or a recoverable tool_error (error, an object's message or any other
// value's text); a line with a waiting call's id that is not JSON is a malformed_response. Calls may be in flight
// together; replies may come in any order; a reply for a call that timed out is dropped. After two call timeouts
// in a row with no reply line of any kind in between, the server is taken as wedged and its process group killed,
// which counts as its exit. If the process exits, calls waiting get a recoverable unavailable error and the next
// call starts it again; if that one exits too, the task is over (runtime.ErrUnrecoverable).
//
// # Processes
//
// Every process runs contained, with an environment of PATH, HOME and the variables its block lists (values read
// from the host at start), nothing else. Contained means in a child cgroup v2 of its own under
// runtime.Init.CgroupParent where that is set (ended with cgroup.kill: nothing it starts escapes, setsid
// included), else in a process group of its own (which a descendant calling setsid leaves). A timeout, a
// cancellation or the end of a oneshot process kills the containment; a oneshot's call returns once its program
// has exited and stdout is drained, whoever else holds the pipe. Teardown closes a server's stdin, waits a bounded
// grace period and kills its containment. Stdout lines have no length limit below the response limit (the
// newline not counted); stderr is always drained, only its tail kept, and the values of forwarded variables are
// masked in the stderr line that messages quote. Process groups need a unix system, cgroups Linux.
package subprocess

import (
	"context"
	"path/filepath"
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
	// Command is the program (a template; never {parameters.*}). A bare name is looked up in the host's PATH; a
	// relative path with a slash is taken from Dir when set, else from the host's working directory.
	Command string `json:"command,omitempty"`
	// Args are its arguments, one template per argv entry (no {parameters.*} in server mode).
	Args []string `json:"args,omitempty"`
	// Env lists the names of host environment variables forwarded to the process; nothing else is inherited
	// except PATH and HOME.
	Env []string `json:"env,omitempty"`
	// TimeoutMS bounds one call, in milliseconds; unset = the host's CallTimeout.
	TimeoutMS *int64 `json:"timeout_ms,omitempty"`
	// Runtime is ModeOneshot (default) or ModeServer.
	Runtime string `json:"runtime,omitempty"`
	// Dir is the working directory.
	Dir string `json:"dir,omitempty"`
}

// Action is a prepared exec action.
type Action struct {
	// Name is the manifest name of the action.
	Name string
	// Command and Args are the parsed templates of the command line.
	Command *interp.Template
	Args    []*interp.Template
	// Env are the names of the host variables to forward.
	Env []string
	// Timeout bounds one call; 0 = the host default.
	Timeout time.Duration
	// Mode is ModeOneshot or ModeServer.
	Mode string
	// Dir is the working directory ("" = the host's); a relative dir in the manifest is made absolute against the
	// manifest file's directory when the manifest was loaded from a file.
	Dir string
}

// Traits reports a local process: unknown effects, treated as destructive.
func (a *Action) Traits() runtime.Traits {
	return runtime.Traits{Owner: "subprocess", Destructive: true, Capabilities: []string{"shell"}}
}

// Backend implements runtime.Runtime for exec.
type Backend struct{}

// Kind returns "exec".
func (Backend) Kind() string { return Kind }

// maxTimeout bounds timeout_ms: a day is longer than any call should run, and far from overflowing a Duration.
const maxTimeout = 24 * time.Hour

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
	a := &Action{Name: b.Action, Env: cfg.Env, Mode: cfg.Runtime, Dir: cfg.Dir}
	if a.Dir != "" && !filepath.IsAbs(a.Dir) && b.BaseDir != "" {
		a.Dir = filepath.Join(b.BaseDir, a.Dir)
	}
	if a.Mode == "" {
		a.Mode = ModeOneshot
	}
	roots := runtime.ExecuteRoots
	if cfg.Command == "" {
		errs.Add(field.Required(b.Path.Child("command"), "command is required"))
	} else {
		cp := p("command", own.Command != "")
		t, e := b.Check.Template(cp, cfg.Command, roots...)
		errs = append(errs, e...)
		errs = append(errs, noParameters(cp, t, "the program to run is the manifest's choice, never the LLM's")...)
		a.Command = t
	}
	argsPath := p("args", own.Args != nil)
	for i, arg := range cfg.Args {
		t, e := b.Check.Template(argsPath.Index(i), arg, roots...)
		errs = append(errs, e...)
		if a.Mode == ModeServer {
			errs = append(errs, noParameters(argsPath.Index(i), t,
				"a server process starts once per task, before any call's parameters are known")...)
		}
		a.Args = append(a.Args, t)
	}
	envPath := p("env", own.Env != nil)
	for i, name := range cfg.Env {
		if !envName.MatchString(name) {
			errs.Add(field.Invalid(envPath.Index(i), "%q is not an environment variable name (env lists names; values are read from the host)", name))
		}
	}
	if cfg.TimeoutMS != nil {
		switch tp := p("timeout_ms", own.TimeoutMS != nil); {
		case *cfg.TimeoutMS <= 0:
			errs.Add(field.Invalid(tp, "timeout_ms must be greater than zero"))
		case *cfg.TimeoutMS > maxTimeout.Milliseconds():
			errs.Add(field.Invalid(tp, "timeout_ms must be at most %d (%s)", maxTimeout.Milliseconds(), maxTimeout))
		default:
			a.Timeout = time.Duration(*cfg.TimeoutMS) * time.Millisecond
		}
	}
	if a.Mode != ModeOneshot && a.Mode != ModeServer {
		errs.Add(field.Unsupported(p("runtime", own.Runtime != ""), "unsupported runtime %q (use oneshot or server)", a.Mode))
	}
	return a, errs.Err()
}

// noParameters forbids {parameters.*} in t, saying why.
func noParameters(p *field.Path, t *interp.Template, why string) field.List {
	if t == nil {
		return nil
	}
	for _, r := range t.Refs() {
		if r.Root == interp.RootParameters {
			return field.List{field.Forbidden(p, "{%s}: parameters cannot be used here: %s", r.Text, why)}
		}
	}
	return nil
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
