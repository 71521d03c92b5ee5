package celenv

import (
	"fmt"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/ext"
)

// Scope names the place an expression appears in a manifest; it decides which variables the expression sees.
type Scope int

// The scopes of SPEC §5.
const (
	ScopeAction      Scope = iota // cel action `expression`: context (alias c), input (alias i), now, runtime; mount.read/mount.write
	ScopeFilter                   // receive `filter`: event, parameters, now; must yield a bool
	ScopeDetect                   // poll `detect`: response, poll, parameters, now; must yield a list
	ScopeExtract                  // legacy extraction maps: event
	ScopePollExtract              // legacy extraction maps of poll events: event, item
	ScopeBinding                  // binding helper: context (alias c), runtime, now
	numScopes
)

// Limits that apply at run time and at load.
const (
	// DefaultCost is the default evaluation cost limit (SPEC §14).
	DefaultCost = 1_000_000
	// DefaultMaxLength is the default limit on the length of an expression, in bytes.
	DefaultMaxLength = 16 << 10
	// MaxLength is the hard ceiling on the length of an expression, in bytes; larger Limits.MaxLength values are
	// clamped to it.
	MaxLength = 1 << 20

	// maxRangeSize bounds lists.range(n); cost alone does not bound the allocation.
	maxRangeSize = 100_000
	// interruptEvery is how many comprehension iterations run between checks of the context.
	interruptEvery = 100
)

type variable struct {
	name string
	typ  *cel.Type
}

var (
	object = cel.MapType(cel.StringType, cel.DynType)

	scopeNames = [numScopes]string{"action", "filter", "detect", "extract", "poll_extract", "binding"}
	scopeVars  = [numScopes][]variable{
		ScopeAction: {
			{"context", object}, {"c", object}, {"input", object}, {"i", object},
			{"now", cel.StringType}, {"runtime", object},
		},
		ScopeFilter:      {{"event", object}, {"parameters", object}, {"now", cel.StringType}},
		ScopeDetect:      {{"response", cel.DynType}, {"poll", object}, {"parameters", object}, {"now", cel.StringType}},
		ScopeExtract:     {{"event", object}},
		ScopePollExtract: {{"event", object}, {"item", cel.DynType}},
		ScopeBinding:     {{"context", object}, {"c", object}, {"runtime", object}, {"now", cel.StringType}},
	}
)

// String returns the scope's name, e.g. "filter".
func (s Scope) String() string {
	if !s.valid() {
		return fmt.Sprintf("Scope(%d)", int(s))
	}
	return scopeNames[s]
}

// Variables returns the names of the variables declared in the scope, aliases included, in a fixed order.
// The result is a fresh slice.
func (s Scope) Variables() []string {
	if !s.valid() {
		return nil
	}
	names := make([]string, len(scopeVars[s]))
	for i, v := range scopeVars[s] {
		names[i] = v.name
	}
	return names
}

func (s Scope) valid() bool { return s >= 0 && s < numScopes }

var envs [numScopes]struct {
	once sync.Once
	env  *cel.Env
	err  error
}

// Env returns the scope's environment. It is built once per process on first use and is safe for concurrent
// use. The error is non-nil only for an unknown scope or if cel-go rejects the configuration.
func Env(s Scope) (*cel.Env, error) {
	if !s.valid() {
		return nil, fmt.Errorf("unknown scope %d", int(s))
	}
	e := &envs[s]
	e.once.Do(func() { e.env, e.err = newEnv(s) })
	return e.env, e.err
}

func newEnv(s Scope) (*cel.Env, error) {
	opts := []cel.EnvOption{
		ext.Strings(),
		ext.Encoders(),
		ext.Math(),
		ext.Lists(ext.ListsMaxRangeSize(maxRangeSize)),
		ext.Sets(),
		cel.OptionalTypes(),
		cel.CrossTypeNumericComparisons(true),
		cel.ParserExpressionSizeLimit(MaxLength),
		cel.EnableMacroCallTracking(), // lets the unparser print macros back for EqualityConjuncts
	}
	for _, v := range scopeVars[s] {
		opts = append(opts, cel.Variable(v.name, v.typ))
	}
	if s == ScopeAction {
		opts = append(opts, mountFunctions...)
	}
	env, err := cel.NewEnv(opts...)
	if err != nil {
		return nil, fmt.Errorf("build cel environment for scope %s: %w", s, err)
	}
	return env, nil
}
