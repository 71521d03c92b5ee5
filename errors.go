package tool

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/commonagents-go/tool/runtime"
	"github.com/commonagents-go/tool/store"
)

// Sentinel errors for decisions a host makes; test them with errors.Is.
var (
	// ErrUnrecoverable marks failures after which the task cannot go on (SPEC §7.1): invalid configuration found
	// at run time, an unreachable endpoint, a session that cannot be created. The library reports it (the error,
	// and the tool.failed fact) and does not close the task: the host ends it, telling the user, then calling
	// Task.Close.
	// It is the same value as runtime.ErrUnrecoverable, which backends wrap.
	ErrUnrecoverable = runtime.ErrUnrecoverable
	// ErrClosed is returned by calls on a closed task.
	ErrClosed = errors.New("tool: task is closed")
	// ErrUnknownAction is returned when Invoke or Start names an action the capability does not include: a
	// host's mistake. (A function name the LLM made up is a runtime.KindUnknownFunction result of InvokeFunction.)
	ErrUnknownAction = errors.New("tool: unknown action")
	// ErrNotFound is returned by Store.Get for an absent key (store.ErrNotFound).
	ErrNotFound = store.ErrNotFound
	// ErrUnknownEvent is returned when an Inbound names an event the tool does not have.
	ErrUnknownEvent = errors.New("tool: unknown event")
	// ErrPayloadTooLarge is returned for an inbound body over Limits.InboundBytes; the Router answers 413.
	ErrPayloadTooLarge = errors.New("tool: payload too large")
	// ErrNotAccepted is returned when a Sink refused an activation, or when the context of a delivery ended
	// before an event's outcome was decided; the Router answers 503 so the sender retries, and the delivery id
	// is not recorded for that event, so the retry activates it.
	ErrNotAccepted = errors.New("tool: activation not accepted by the sink")
	// ErrInterrupted is returned by a call that Task.Interrupt cancelled (actions whose interrupt_behavior is
	// cancel).
	ErrInterrupted = errors.New("tool: task interrupted")
)

// Problem is one thing wrong with a manifest (or with the settings given to Load), at a field path.
type Problem struct {
	// Path is the field path in manifest names, e.g. "actions[2].execute.stateless_http.url". Stable: tests
	// and tools may match on it.
	Path string `json:"path"`
	// Type is "required", "invalid", "unsupported", "duplicate" or "forbidden".
	Type string `json:"type"`
	// Detail explains the problem; it never contains a secret value.
	Detail string `json:"detail"`
	// Line and Column locate the field in YAML or JSON source (1-based); 0 when unknown.
	Line   int `json:"line,omitempty"`
	Column int `json:"column,omitempty"`
}

// String renders "path: detail" with the line when known.
func (p Problem) String() string {
	var b strings.Builder
	switch {
	case p.Line > 0 && p.Column > 0:
		fmt.Fprintf(&b, "%d:%d: ", p.Line, p.Column)
	case p.Line > 0:
		fmt.Fprintf(&b, "%d: ", p.Line)
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Detail)
	return b.String()
}

// ValidationError is returned by Load when the manifest has problems. It lists every problem found, sorted by
// path.
type ValidationError struct {
	Problems []Problem
}

// Error lists the problems, one per line.
func (e *ValidationError) Error() string {
	var b strings.Builder
	what := "manifest"
	outside := func(prefixes ...string) func(Problem) bool {
		return func(p Problem) bool {
			return !slices.ContainsFunc(prefixes, func(pre string) bool {
				return p.Path == pre || strings.HasPrefix(p.Path, pre+".") || strings.HasPrefix(p.Path, pre+"[")
			})
		}
	}
	switch {
	case len(e.Problems) == 0:
	case !slices.ContainsFunc(e.Problems, outside("bindings")):
		what = "bindings" // NewTask's problems: the manifest is fine, the capability is not
	case !slices.ContainsFunc(e.Problems, outside("bindings", "approve", "approver", "context", "expires_at")):
		what = "task configuration"
	}
	fmt.Fprintf(&b, "tool: invalid %s: %d problem", what, len(e.Problems))
	if len(e.Problems) != 1 {
		b.WriteByte('s')
	}
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// ErrTaskExpired is returned by RestoreTask for a task whose ExpiresAt has passed: the task was closed (its
// backends torn down, its state removed) instead of being restored.
var ErrTaskExpired = errors.New("tool: task expired")

// ErrTaskExists is returned by NewTask for an ID the Store already holds a task under: restore it (RestoreTask) or
// end it (Close) rather than start another over its state.
var ErrTaskExists = errors.New("tool: a task with this ID is already in the Store")

// ErrNotReindexed is returned by Router.Serve in store mode for a Tool whose tasks' routes were never written
// by Tool.ReindexRoutes.
var ErrNotReindexed = errors.New("tool: the Store's routing index was not built for this tool: run Tool.ReindexRoutes " +
	"once every replica runs WithRouteIndex")
