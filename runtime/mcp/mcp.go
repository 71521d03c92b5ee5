// Package mcp is the mcp action backend (SPEC §7.6): actions proxied to tools of a Model Context Protocol server
// over stdio, SSE or streamable HTTP, with github.com/mark3labs/mcp-go. Importing the root package registers it.
//
// A task runs one server per server block: every action that takes its server from the top-level mcp block shares
// one, started (or connected) on the first call that needs it; an action with a server block of its own gets its
// own. Teardown closes them all.
package mcp

import (
	"context"
	"regexp"
	"strings"
	"time"

	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/internal/httpspec"
	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/mcpauth"
	"github.com/commonagents-go/tool/runtime"
)

// Kind is the execute-block key of this backend.
const Kind = "mcp"

// The transports a server block may name.
const (
	TransportStdio          = "stdio"
	TransportSSE            = "sse"
	TransportStreamableHTTP = "streamable_http" // extension
)

func init() { runtime.Default().MustRegister(Backend{}) }

// Server says how to reach an MCP server; it is the whole top-level mcp block.
type Server struct {
	Transport string            `json:"transport,omitempty"`
	Command   string            `json:"command,omitempty"`
	Args      []string          `json:"args,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	URL       string            `json:"url,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	// Timeout bounds one tools/call and the server's start and handshake (extension; default: the host's call
	// timeout, else 30s).
	Timeout string `json:"timeout,omitempty"`
}

// Config is an action-level mcp block: its own server, or none to use the top-level one. Without a server of its own
// (no transport, command or url) it may set only tool_name and timeout, which then bounds this action's calls on
// the shared server; args, env and headers there are load problems, since they would configure no server.
type Config struct {
	Server
	// ToolName is the server's tool to call; default: the action name.
	ToolName string `json:"tool_name,omitempty"`
}

// CompiledServer is a Server with its templates parsed.
type CompiledServer struct {
	Transport string
	Command   *interp.Template
	Args      []*interp.Template
	Env       map[string]*interp.Template
	URL       *interp.URL
	Headers   map[string]*interp.Template
	Timeout   time.Duration
}

// Action is a prepared mcp action.
type Action struct {
	// Server is the server the action calls: its own block's, else the top-level block's.
	Server *CompiledServer
	// Key identifies the server within a task: the field path of the block that defines it ("mcp" for the
	// top-level block, which all actions without a server of their own share).
	Key string
	// ToolName is the server's tool to call.
	ToolName string
	// Timeout bounds one tools/call of this action: its own block's timeout, else the server's; 0 leaves it to
	// the host's limit (else 30s).
	Timeout time.Duration
	// Hints are the tool's annotations when the action was expanded from tools/list, or declared for a tool that
	// tools/list showed at load (discovery on, Annotate); nil otherwise.
	Hints *runtime.Traits
	// ToolTitle is the tool's title (or annotations.title) as tools/list showed it at load; "" otherwise.
	ToolTitle string
}

// Title is the tool's title as its server gives it (runtime.Titler).
func (a *Action) Title() string { return a.ToolTitle }

// Traits reports a call whose effect the server decides; unknown is treated as destructive.
func (a *Action) Traits() runtime.Traits {
	if a.Hints != nil {
		return *a.Hints
	}
	return runtime.Traits{Owner: "mcp_server", OpenWorld: true, Destructive: true}
}

// Backend implements runtime.Runtime for mcp. The zero value is what the package registers.
type Backend struct {
	// SSEResponseTimeout is the least time the SSE client waits for the reply to a request; 0 means mcp-go's
	// default (60s). The wait is raised to the longest call timeout of the task's mcp actions (and to the
	// server's start timeout), so a call always ends at its own deadline, never at this client timer. Lowering
	// it is for tests that exercise calls longer than the default; a host registers
	// Backend{SSEResponseTimeout: d} in a registry of its own (tool.WithRuntimes).
	SSEResponseTimeout time.Duration
	// LoadAuthorizer authorizes the listings done at load (discovery, the hints of declared actions) and by
	// Tool.Rediscover, on remote servers protected by OAuth. There is no end user then: the Authorizer is asked
	// for the host's own grant (mcpauth.Server.Subject is ""), which an mcpauth.Client takes with the client
	// credentials grant of a RegisteredClient that allows it (ClientCredentials). A server it cannot authorize
	// stays a load warning. nil: a protected server is a load warning, and its actions must be declared. A host
	// registers Backend{LoadAuthorizer: a} in a registry of its own (tool.WithRuntimes).
	LoadAuthorizer mcpauth.Authorizer
}

// defaultSSEResponseTimeout is mcp-go's default wait for an SSE reply.
const defaultSSEResponseTimeout = 60 * time.Second

// replyFloor is the least wait for an SSE reply.
func (b Backend) replyFloor() time.Duration {
	if b.SSEResponseTimeout > 0 {
		return b.SSEResponseTimeout
	}
	return defaultSSEResponseTimeout
}

// Kind returns "mcp".
func (Backend) Kind() string { return Kind }

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Prepare validates the action's block; the action uses the shared server unless it declares its own.
func (Backend) Prepare(_ context.Context, b *runtime.Block) (runtime.Action, error) {
	var cfg Config
	errs := b.Decode(&cfg)
	a := &Action{ToolName: cfg.ToolName}
	if a.ToolName == "" {
		a.ToolName = b.Action
	}
	switch {
	case cfg.Server.Transport != "" || cfg.Command != "" || cfg.URL != "":
		s, e := CompileServer(b.Check, b.Path, cfg.Server)
		errs = append(errs, e...)
		a.Server, a.Key = s, b.Path.String()
	case b.Shared == nil:
		errs.Add(field.Required(b.Path.Child("transport"),
			"an mcp action needs a server: give transport and command or url here or in a top-level mcp block"))
	default:
		// Only tool_name and timeout apply to an action on the shared server.
		for _, f := range []struct {
			name string
			set  bool
		}{{"args", len(cfg.Args) > 0}, {"env", len(cfg.Env) > 0}, {"headers", len(cfg.Headers) > 0}} {
			if f.set {
				errs.Add(field.Forbidden(b.Path.Child(f.name), "%s configures a server: give transport here too for a "+
					"server of this action's own, or set it in the top-level mcp block", f.name))
			}
		}
		// ValidateShared reports the top-level block's problems once; here it is only compiled.
		a.Server, a.Key = sharedServer(b)
	}
	d, e := httpspec.Duration(b.Path.Child("timeout"), cfg.Timeout)
	errs.Add(e)
	a.Timeout = d
	if a.Timeout == 0 && a.Server != nil {
		a.Timeout = a.Server.Timeout
	}
	return a, errs.Err()
}

// sharedServer compiles the top-level block for an action that uses it; nil when it has problems (reported by
// ValidateShared).
func sharedServer(b *runtime.Block) (*CompiledServer, string) {
	var s Server
	if errs := b.DecodeShared(&s); len(errs) > 0 {
		return nil, b.SharedPath.String()
	}
	c, errs := CompileServer(b.Check, b.SharedPath, s)
	if len(errs) > 0 {
		return nil, b.SharedPath.String()
	}
	return c, b.SharedPath.String()
}

// ValidateShared checks the top-level mcp block once.
func (Backend) ValidateShared(_ context.Context, b *runtime.Block) error {
	var s Server
	errs := b.DecodeShared(&s)
	_, e := CompileServer(b.Check, b.SharedPath, s)
	return append(errs, e...).Err()
}

// CompileServer checks a server block at p and parses its templates.
func CompileServer(c runtime.Checker, p *field.Path, s Server) (*CompiledServer, field.List) {
	var errs field.List
	out := &CompiledServer{Transport: s.Transport, Env: map[string]*interp.Template{}, Headers: map[string]*interp.Template{}}
	roots := runtime.ExecuteRoots
	local := s.Command != "" || len(s.Args) > 0 || len(s.Env) > 0
	remote := s.URL != "" || len(s.Headers) > 0
	switch s.Transport {
	case TransportStdio:
		if s.Command == "" {
			errs.Add(field.Required(p.Child("command"), "the stdio transport needs a command"))
		}
		if remote {
			errs.Add(field.Forbidden(p.Child("url"), "url and headers belong to the sse and streamable_http transports"))
		}
	case TransportSSE, TransportStreamableHTTP:
		if s.URL == "" {
			errs.Add(field.Required(p.Child("url"), "the %s transport needs a url", s.Transport))
		}
		if local {
			errs.Add(field.Forbidden(p.Child("command"), "command, args and env belong to the stdio transport"))
		}
	case "":
		errs.Add(field.Required(p.Child("transport"), "transport is required (stdio, sse or streamable_http)"))
	default:
		errs.Add(field.Unsupported(p.Child("transport"), "unsupported transport %q (use stdio, sse or streamable_http)", s.Transport))
		return out, errs
	}
	if s.Command != "" {
		t, e := c.Template(p.Child("command"), s.Command, roots...)
		errs = append(errs, e...)
		errs = append(errs, noParameters(p.Child("command"), t)...)
		out.Command = t
	}
	for i, arg := range s.Args {
		t, e := c.Template(p.Child("args").Index(i), arg, roots...)
		errs = append(errs, e...)
		errs = append(errs, boundOnly(c, p.Child("args").Index(i), refs(t))...)
		out.Args = append(out.Args, t)
	}
	for name, v := range s.Env {
		ep := p.Child("env").Key(name)
		if !envName.MatchString(name) {
			errs.Add(field.Invalid(ep, "%q is not a valid environment variable name", name))
			continue
		}
		t, e := c.Template(ep, v, roots...)
		errs = append(errs, e...)
		errs = append(errs, boundOnly(c, ep, refs(t))...)
		out.Env[name] = t
	}
	if s.URL != "" {
		u, e := c.URL(p.Child("url"), s.URL, "", roots...)
		errs = append(errs, e...)
		if len(e) == 0 && u != nil {
			errs = append(errs, boundOnly(c, p.Child("url"), u.Refs())...)
		}
		out.URL = u
	}
	for name, v := range s.Headers {
		hp := p.Child("headers").Key(name)
		t, e := c.Template(hp, v, roots...)
		errs = append(errs, e...)
		errs = append(errs, boundOnly(c, hp, refs(t))...)
		out.Headers[name] = t
	}
	d, e := httpspec.Duration(p.Child("timeout"), s.Timeout)
	errs.Add(e)
	out.Timeout = d
	return out, errs
}

func refs(t *interp.Template) []interp.Ref {
	if t == nil {
		return nil
	}
	return t.Refs()
}

// noParameters forbids {parameters.*} in a stdio command: the program to run is the manifest's choice.
func noParameters(p *field.Path, t *interp.Template) field.List {
	for _, r := range refs(t) {
		if r.Root == interp.RootParameters {
			return field.List{field.Forbidden(p, "{%s}: parameters cannot be used in command: the program to run is "+
				"the manifest's choice, never the LLM's", r.Text)}
		}
	}
	return nil
}

// boundOnly admits {parameters.x} in a server field only when x has require_binding: true. A server starts once
// per task, with the values of the call that starts it, so a value the LLM chooses per call would be used once and
// then silently ignored; a bound value is the same for every call of the task.
func boundOnly(c runtime.Checker, p *field.Path, rs []interp.Ref) field.List {
	var errs field.List
	for _, r := range rs {
		if r.Root != interp.RootParameters {
			continue
		}
		name := ""
		if len(r.Steps) > 0 && !r.Steps[0].IsIndex {
			name = r.Steps[0].Name
		}
		if name != "" && !requiresBinding(c, name) {
			errs.Add(field.Forbidden(p, "{%s}: a server starts once per task, so only a parameter with "+
				"require_binding: true (fixed by the capability's bindings) may be used here; %q has none", r.Text, name))
		} else if name == "" {
			errs.Add(field.Forbidden(p, "{%s}: a server starts once per task, so only single parameters with "+
				"require_binding: true may be used here", r.Text))
		}
	}
	return errs
}

// requiresBinding reports whether the declared parameter name has require_binding: true. runtime.Checker has no
// direct question for it, so it asks the one check that depends on it: a parameter in a URL's host is admitted
// only with require_binding (SPEC §4.4). An undeclared name reports true here: Template already reported it.
func requiresBinding(c runtime.Checker, name string) bool {
	q := "'"
	if strings.Contains(name, q) {
		q = `"`
		if strings.Contains(name, q) {
			return false // cannot be asked; refused
		}
	}
	probe := "http://{parameters[" + q + name + q + "]}/"
	_, errs := c.URL(field.NewPath("probe"), probe, "", interp.RootParameters)
	for _, e := range errs {
		if e.Type == field.TypeForbidden {
			return false
		}
	}
	return true
}

var (
	_ runtime.Runtime         = Backend{}
	_ runtime.SharedValidator = Backend{}
	_ runtime.Expander        = Backend{}
	_ runtime.Annotator       = Backend{}
	_ runtime.Describer       = (*Action)(nil)
)
var _ runtime.Titler = (*Action)(nil)
