// Package runtime defines the contract between the tool loader and the action backends (SPEC §7), in the way
// database/sql/driver separates drivers from database/sql.
//
// A backend implements Runtime and registers itself, usually from an init function, in Default(); hosts that want
// a different set clone a registry, register their own backend and pass it to tool.WithRuntimes. Each backend
// lives in its own package (runtime/celexpr, runtime/statelesshttp, ...) and never imports the root package.
//
// The lifecycle: Prepare runs once per action when the manifest loads and does all the fallible, expensive work
// (strict decoding, template parsing, CEL compilation); Initialize runs once per task and backend kind, lazily;
// Instance.Invoke runs per call; Instance.Teardown runs exactly once per successful Initialize.
package runtime

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/commonagents-go/tool/celenv"
	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/internal/decode"
	"github.com/commonagents-go/tool/internal/registry"
	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/mcpauth"
)

// Runtime is one action backend, keyed by its execute-block key.
type Runtime interface {
	// Kind is the execute-block key, e.g. "stateless_http".
	Kind() string
	// Prepare validates and compiles one action's block at load. Problems are returned as a field.List (use
	// b.Decode and the b.Check helpers so every problem is reported at its path); any other error is reported at
	// the block's path.
	Prepare(ctx context.Context, b *Block) (Action, error)
	// Initialize prepares the backend for one task: it runs once per task, on the first call that needs it.
	// An error here is unrecoverable for the task.
	Initialize(ctx context.Context, in *Init) (Instance, error)
}

// Instance is a backend initialized for one task. Invoke may be called concurrently.
type Instance interface {
	// Invoke runs one call of a, an Action this backend prepared. A failure the LLM can correct or retry is
	// returned as a Result whose Error is set, or as an *Error (the caller wraps it in a Result); any other
	// error is unrecoverable (SPEC §7.1: the host ends the task) and should wrap ErrUnrecoverable. ctx carries the call's deadline.
	// A request that may have reached the server is never sent again unless call.Idempotent; when no usable
	// reply came back, the failure is a LostReply error (the outcome is unknown).
	Invoke(ctx context.Context, a Action, call *Call) (*Result, error)
	// Teardown releases what Initialize acquired; ctx bounds how long it may take.
	Teardown(ctx context.Context) error
}

// Action is the prepared, immutable form of one action's block, returned by Prepare and handed back to Invoke.
// It may implement Describer.
type Action any

// Describer is implemented by prepared actions that know their own traits, which the catalog uses when the
// manifest gives no annotations (SPEC §11).
type Describer interface {
	Traits() Traits
}

// Titler is implemented by prepared actions whose source gives them a human-readable title (an MCP tool's title),
// which the catalog shows.
type Titler interface {
	Title() string
}

// Traits describe what an action does, for the catalog.
type Traits struct {
	ReadOnly        bool
	Destructive     bool
	Idempotent      bool
	ConcurrencySafe bool
	OpenWorld       bool
	// Capabilities are coarse flags such as "read", "write", "network", "shell".
	Capabilities []string
	// Owner is who runs the action: "local", "http", "mcp_server", "kubernetes" or "subprocess".
	Owner string
}

// Block is one action's execute block, as the loader hands it to Prepare.
type Block struct {
	// Kind is the execute-block key.
	Kind string
	// Tool and Action name the manifest and the action the block belongs to.
	Tool, Action string
	// Path is the field path of the block, e.g. actions[2].execute.stateless_http.
	Path *field.Path
	// Value is the block's decoded JSON (objects are map[string]any, numbers json.Number).
	Value any
	// Shared is the decoded top-level block of the same kind, nil when the manifest has none; SharedPath is
	// its path.
	Shared     any
	SharedPath *field.Path
	// Check validates templates and CEL against the manifest's declarations.
	Check Checker
	// BaseDir is the directory of the manifest file, "" when it was loaded from bytes. Relative file references
	// in a block (an OpenAPI document) resolve against it.
	BaseDir string
	// Discover is set when the host consented (tool option) to contacting live servers at load to list the
	// actions they offer; an Expander that needs a live server (MCP tools/list) expands only when it is set.
	Discover bool
	// Used is set, for Expand, when a declared action runs on this backend: SPEC §7.6 expands a top-level mcp
	// block only when no action is bound to it.
	Used bool
	// Declared are the prepared actions the manifest declares on this backend, for Expand and Annotate: a
	// backend may learn what their source says of them (an MCP tool's hints and title) while it lists the source,
	// setting it on its own prepared actions before Load returns.
	Declared []Action
	// Values resolves {settings.*} and {runtime.*} tokens for work done at load (Expand, Annotate); nil in
	// Prepare.
	Values interp.Resolver
	// RefOrigins are the origins (scheme://host[:port]) the host lets documents read at load refer to beyond
	// their own (tool.WithDocumentOrigins).
	RefOrigins []string
	// DocumentBytes bounds one document read at load (tool.Limits.DocumentBytes); 0 is the backend's default.
	DocumentBytes int64
}

// Decode decodes the block into dst strictly (unknown keys and wrong types become problems at their paths).
func (b *Block) Decode(dst any) field.List {
	return decode.Into(b.Value, dst, b.Path)
}

// DecodeShared decodes the shared top-level block into dst strictly; it does nothing when there is none.
func (b *Block) DecodeShared(dst any) field.List {
	if b.Shared == nil {
		return nil
	}
	return decode.Into(b.Shared, dst, b.SharedPath)
}

// Init is what a backend receives when a task first needs it.
type Init struct {
	// TaskID and Tool name the task and its manifest; ToolNamespace is the manifest's namespace.
	TaskID, Tool  string
	ToolNamespace string
	// Action is the prepared action whose call triggered Initialize.
	Action Action
	// Actions are every prepared action of the tool that runs on this backend.
	Actions []Action
	// Values resolves template tokens for requests made during Initialize (a session's create): those of the
	// call that triggered it. See Call.Values.
	Values interp.Resolver
	// HTTPClient is the client for every request the backend makes. Its redirect policy is already set (SPEC
	// §4.4: same scheme and host only); backends must not replace it.
	HTTPClient *http.Client
	// Limits are the host's bounds.
	Limits Limits
	// State is this backend's slot in the task state (SPEC §13), for what must survive a host restart, such as
	// the values of a session to destroy.
	State State
	// Context is the task context (CEL `context`), Runtime what `runtime` holds (version, api_root,
	// dashboard_url), Mount the storage behind mount.read/mount.write (nil when the host configured none) and Now
	// the task's clock. Backends that evaluate CEL use them; read-only.
	Context map[string]any
	Runtime map[string]any
	Mount   celenv.Mount
	Now     func() time.Time
	// Observe reports a lifecycle fact such as "session.created"; data must not hold secrets. Never nil.
	Observe func(ctx context.Context, name string, data map[string]any)
	// Logger is the host's logger. Never nil.
	Logger *slog.Logger
	// CgroupParent is the cgroup v2 directory under which each process a backend starts (an exec program, a
	// stdio MCP server) runs in a child cgroup of its own, so that everything it starts ends with it; "" = none
	// writable, a process group of its own only. The host chooses it (tool.WithCgroupParent).
	CgroupParent string
	// Processes bounds the processes the task's backends have running at once (tool.Limits.MaxProcesses); a
	// backend takes a slot before it starts one. nil: no bound.
	Processes *Processes
	// Elicit asks the host's user for input a server requests during a call (tool.TaskConfig.Elicitor); nil when
	// the host has no hook.
	Elicit ElicitFunc
	// Sample asks the host's LLM for the completions a server requests during a call (tool.TaskConfig.Sampler);
	// nil when the host has no hook.
	Sample SampleFunc
	// Roots lists the host's roots a server asks for (tool.TaskConfig.Roots); nil when the host has no hook.
	Roots RootsFunc
	// Relay passes the servers' requests (sampling, elicitation, roots) to the host's own MCP client as they came,
	// offering the capabilities that client declared (tool.TaskConfig.MCPRelay); when set, the typed hooks above
	// are not used. nil when the host has none.
	Relay Relay
	// Subject is the end user the task acts for (tool.TaskConfig.Subject), "" when the host named none.
	Subject string
	// Authorizer gives the bearer tokens of the requests to remote MCP servers and answers their challenges
	// (tool.TaskConfig.MCPAuthorizer); the tokens it returns are already secrets of the task. nil when the host
	// has none.
	Authorizer mcpauth.Authorizer
}

// The SPEC §14 defaults of the call and teardown bounds: tool.DefaultLimits and every backend (when the host's
// Limits leave one at zero) take them from here, so they have one source.
const (
	DefaultCallTimeout     = 30 * time.Second
	DefaultTeardownTimeout = 10 * time.Second
)

// Limits are the bounds a backend applies (SPEC §14).
type Limits struct {
	// CallTimeout bounds one call when the action sets no timeout of its own.
	CallTimeout time.Duration
	// ResponseBytes bounds a response body; larger is a recoverable result_too_large error.
	ResponseBytes int64
	// TeardownTimeout bounds Teardown; the caller's ctx already carries it as a deadline.
	TeardownTimeout time.Duration
}

// State is a backend's slot in the task state. Implementations are safe for concurrent use.
type State interface {
	// Load returns what Save stored last; nil and no error when nothing is stored.
	Load(ctx context.Context) ([]byte, error)
	// Save replaces the stored value.
	Save(ctx context.Context, value []byte) error
}

// Call is one invocation of an action.
type Call struct {
	// ID identifies the call in results, facts and logs.
	ID string
	// Action is the manifest name of the action.
	Action string
	// Args are the resolved parameters of the call (root and action), after bindings and defaults.
	Args map[string]any
	// Idempotent is set when the action is marked idempotent or read-only (its annotations, else its backend's
	// traits): only then may a backend send again a request that may have reached the server. A request that
	// provably was not written (no connection was made, the transport was closed before it) may always be sent.
	Idempotent bool
	// Bounded is set when the call's context already carries the action's time bound (the action is Bounded and
	// the task applied its CallTimeout): Invoke need not bound the call again.
	Bounded bool
	// Values resolves every template root of SPEC §4.2 except session, which belongs to the stateful_session
	// backend: parameters (from Args), settings, runtime, agent, mount, context and auth (which fetches a token
	// through the host's provider, bounded by the call's context). Its errors are *Error when the call can be
	// corrected (a missing auth token), else they wrap ErrUnrecoverable; they never carry a value.
	Values interp.Resolver
}

// Bounded is implemented by an Action whose calls have a time bound known before they run. The task creates a
// context for every call anyway (to cancel it when the task closes); for such an action it creates it with that
// bound and sets Call.Bounded, so that one context serves both.
type Bounded interface {
	// CallTimeout is the bound of one call of the action under l.
	CallTimeout(l Limits) time.Duration
}

// RequestRecorder is implemented by the Values of a call (Call.Values) whose secrets are scrubbed in encoded forms
// too: a backend that renders an HTTP request from them reports it with Rendered once it is built, so that each
// header value, the URL and the body that holds a secret become secrets of that call, with their base64,
// URL-escaped and JSON-escaped forms (a server may echo them so). body is the encoded body, nil when none.
// Rendered must not keep req or body. Report through RecordRequest.
type RequestRecorder interface {
	Rendered(req *http.Request, body []byte)
}

// RecordRequest reports req to values when it is a RequestRecorder; other resolvers are left alone.
func RecordRequest(values interp.Resolver, req *http.Request, body []byte) {
	if r, ok := values.(RequestRecorder); ok {
		r.Rendered(req, body)
	}
}

// SecretRecorder is implemented by the Values of a call (Call.Values) whose secrets are masked in encoded forms
// too: a backend that sends a secret it obtained itself rather than through a template (a bearer from the task's
// mcpauth.Authorizer, which is already a task secret) reports it with Secret, so that its encoded forms (base64,
// URL- and JSON-escaped) are masked in that call's result, errors and facts, and the rendered requests it reports
// (RecordRequest) derive from it. Report through RecordSecret.
type SecretRecorder interface {
	Secret(value string)
}

// RecordSecret reports value to values when it is a SecretRecorder; other resolvers are left alone.
func RecordSecret(values interp.Resolver, value string) {
	if r, ok := values.(SecretRecorder); ok {
		r.Secret(value)
	}
}

// Result is what a backend returns for one call.
type Result struct {
	// Output is the JSON value for the LLM: nil, bool, string, float64, json.Number, integers, []any,
	// map[string]any.
	Output any
	// ServerData is for the host only, never the LLM: HTTP status and headers, stderr, the raw body of an error.
	ServerData map[string]any
	// Content is the result's blocks as an MCP server sent them, in order (mcp backend); nil for other backends.
	Content []Content
	// Error is set when the call failed in a way the LLM can correct or retry (SPEC §7.1): Output is then
	// ignored.
	Error *Error
	// BytesIn and BytesOut count the bytes received and sent, for telemetry.
	BytesIn, BytesOut int64
	// Attempts is how many times the backend tried the call; 0 means 1.
	Attempts int
}

// ErrNotImplemented is returned by Initialize of backends whose execution has not been built yet; their blocks
// are still fully validated at load.
var ErrNotImplemented = errors.New("runtime: execution of this backend is not implemented yet")

// Registry maps execute-block keys to backends. It is safe for concurrent use.
type Registry struct{ set *registry.Set[Runtime] }

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{set: registry.New[Runtime]("runtime")} }

var defaultRegistry = NewRegistry()

// Default returns the process-wide registry that built-in plugins register into from their init functions.
// Hosts should not register into it after init; clone it instead.
func Default() *Registry { return defaultRegistry }

// Register adds rt. It fails when rt is nil, has no kind, or its kind is already registered.
func (r *Registry) Register(rt Runtime) error { return r.set.Register(rt) }

// MustRegister is Register for init functions: it panics on error.
func (r *Registry) MustRegister(rt Runtime) {
	if err := r.Register(rt); err != nil {
		panic(err)
	}
}

// Lookup returns the plugin registered for kind.
func (r *Registry) Lookup(kind string) (Runtime, bool) { return r.set.Lookup(kind) }

// Kinds returns the registered kinds, sorted.
func (r *Registry) Kinds() []string { return r.set.Kinds() }

// Clone returns an independent copy of r.
func (r *Registry) Clone() *Registry { return &Registry{set: r.set.Clone()} }

// Resumer is implemented by backends that keep task state a later process must act on (stateful_session's
// sessions to destroy). When Tool.RestoreTask finds state of the backend in the Store, it calls Resume instead of
// waiting for a call to Initialize: the instance knows what was recorded and tears it down at Close, and it
// serves calls like an initialized one. Resume must not start anything new (no session, no process). in.Action is
// nil; in.Actions lists the tool's actions of this backend and in.Values resolves the task's bindings.
type Resumer interface {
	Resume(ctx context.Context, in *Init) (Instance, error)
}

// Detacher is implemented by instances whose task state outlives the process (stateful_session's sessions): on
// Task.Detach the task calls Detach instead of Teardown, which must release what lives in this process only and
// leave what the state records for the process that resumes the task. Instances without it are torn down.
type Detacher interface {
	Detach(ctx context.Context) error
}

// SharedValidator is implemented by backends that validate their top-level block on its own, once, whether or
// not an action uses it (an openapi or mcp block may expand into actions). b.Value is nil.
type SharedValidator interface {
	ValidateShared(ctx context.Context, b *Block) error
}
