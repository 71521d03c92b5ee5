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
	"time"

	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/internal/httpspec"
	"github.com/commonagents-go/tool/interp"
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
	// Timeout bounds one tools/call (extension; default 30s).
	Timeout string `json:"timeout,omitempty"`
}

// Config is an action-level mcp block: its own server, or none to use the top-level one.
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
	// Hints are the tool's annotations when the action was expanded from tools/list; nil otherwise.
	Hints *runtime.Traits
}

// Traits reports a call whose effect the server decides; unknown is treated as destructive.
func (a *Action) Traits() runtime.Traits {
	if a.Hints != nil {
		return *a.Hints
	}
	return runtime.Traits{Owner: "mcp_server", OpenWorld: true, Destructive: true}
}

// Backend implements runtime.Runtime for mcp.
type Backend struct{}

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
		// ValidateShared reports the top-level block's problems once; here it is only compiled.
		a.Server, a.Key = sharedServer(b)
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
		out.Command = t
	}
	for i, arg := range s.Args {
		t, e := c.Template(p.Child("args").Index(i), arg, roots...)
		errs = append(errs, e...)
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
		out.Env[name] = t
	}
	if s.URL != "" {
		u, e := c.URL(p.Child("url"), s.URL, "", roots...)
		errs = append(errs, e...)
		out.URL = u
	}
	for name, v := range s.Headers {
		t, e := c.Template(p.Child("headers").Key(name), v, roots...)
		errs = append(errs, e...)
		out.Headers[name] = t
	}
	d, e := httpspec.Duration(p.Child("timeout"), s.Timeout)
	errs.Add(e)
	out.Timeout = d
	return out, errs
}

var (
	_ runtime.Runtime         = Backend{}
	_ runtime.SharedValidator = Backend{}
	_ runtime.Expander        = Backend{}
	_ runtime.Describer       = (*Action)(nil)
)
