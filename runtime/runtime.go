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
	"net/http"

	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/internal/decode"
	"github.com/commonagents-go/tool/internal/registry"
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
	TaskID     string
	Tool       string
	HTTPClient *http.Client
}

// Call is one invocation of an action.
type Call struct {
	ID     string
	Action string
	// Args are the resolved parameters of the call (root and action), after bindings and defaults.
	Args map[string]any
}

// Result is what a backend returns for one call.
type Result struct {
	Output     any
	ServerData map[string]any
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

// SharedValidator is implemented by backends that validate their top-level block on its own, once, whether or
// not an action uses it (an openapi or mcp block may expand into actions). b.Value is nil.
type SharedValidator interface {
	ValidateShared(ctx context.Context, b *Block) error
}
