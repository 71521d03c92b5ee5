package tool

import (
	"encoding/json"
	"time"

	"github.com/commonagents-go/tool/runtime"
)

// Result is the outcome of one call (SPEC §8). A call that failed in a way the LLM can correct or retry still
// has a Result: IsError is true, Error says why, and Output holds the same error as a JSON object for the LLM.
// Nothing in a Result holds a secret value.
type Result struct {
	// CallID identifies the call (see ContextWithCallID); Action is the manifest name, Function the LLM-facing name.
	CallID, Action, Function string
	// Output is the JSON value for the LLM: nil, bool, string, float64, json.Number, int64, []any or
	// map[string]any. When Omitted it is {"omitted": OmittedReason}.
	Output any
	// OutputJSON is Output encoded once as compact JSON; OutputBytes is its size before any omission.
	OutputJSON  json.RawMessage
	OutputBytes int
	// Omitted is set when the output exceeded the host's result budget (Limits.ResultBytes); the full output is
	// then in ServerData["output"].
	Omitted       bool
	OmittedReason string
	// ServerData is for the host, never the LLM: HTTP status and headers, stderr excerpts, omitted output.
	ServerData map[string]any
	// Content is the result's blocks as the MCP server of an mcp action sent them, in order: text, images,
	// audio, resource links and embedded resources, for a host to hand to an LLM SDK as they are (an image block
	// in an Anthropic tool result, say). Output and Text() stay as they are: the structured content, else the
	// text blocks joined. Secrets are masked in every block, their encoded forms too. nil for other backends.
	Content   []runtime.Content
	IsError   bool
	Error     *ToolError
	Telemetry Telemetry
}

// ToolError is a recoverable failure of one call: the task goes on and the LLM may correct or retry its call.
// Message is safe to show the LLM.
type ToolError struct {
	// Kind is one of the runtime package's Kind constants (SPEC §8), such as runtime.KindMissingFields or runtime.KindRateLimited.
	Kind       string        `json:"kind"`
	Message    string        `json:"message"`
	Retryable  bool          `json:"retryable,omitempty"`
	RetryAfter time.Duration `json:"-"`
	// OutcomeUnknown says the request may have reached the server and no usable reply came back (lost, late or
	// unreadable): the call may or may not have taken effect. Such an error is Retryable only for an action
	// marked idempotent or read-only; otherwise its Hint says to check the state before calling again.
	OutcomeUnknown bool       `json:"outcome_unknown,omitempty"`
	Hint           *RetryHint `json:"hint,omitempty"`
	Cause          *ToolError `json:"cause,omitempty"`
}

// Error returns "kind: message".
func (e *ToolError) Error() string { return e.Kind + ": " + e.Message }

// RetryHint helps the LLM correct a call.
type RetryHint struct {
	// MissingFields names the required parameters the call lacked; Schemas holds the JSON Schema of each.
	MissingFields []string                   `json:"missing_fields,omitempty"`
	Schemas       map[string]json.RawMessage `json:"schemas,omitempty"`
	// ExampleInput is a valid argument object built from the schema's defaults and examples, when there is one.
	ExampleInput map[string]any `json:"example_input,omitempty"`
	// Functions lists the functions the LLM can call, when it named one that does not exist.
	Functions []string `json:"functions,omitempty"`
	Message   string   `json:"message,omitempty"`
}

// Telemetry describes how a call ran.
type Telemetry struct {
	Start    time.Time
	Duration time.Duration
	// Attempts is how many times the backend tried the call.
	Attempts int
	// Backend is the execute-block key, e.g. "stateless_http".
	Backend           string
	BytesIn, BytesOut int64
	// IgnoredArguments names LLM arguments that were dropped because the parameter is bound (SPEC §3.3).
	IgnoredArguments []string
}

// toolError converts a backend's error for a call of an action that may (retrySafe: idempotent or read-only) or
// may not be sent again: an outcome-unknown error of an action that may not is not retryable.
func toolError(e *runtime.Error, retrySafe bool) *ToolError {
	if e == nil {
		return nil
	}
	te := &ToolError{Kind: e.Kind, Message: e.Message, Retryable: e.Retryable, RetryAfter: e.RetryAfter,
		OutcomeUnknown: e.OutcomeUnknown, Cause: toolError(e.Cause, retrySafe)}
	hint := e.Hint
	if e.OutcomeUnknown && !retrySafe {
		te.Retryable, te.RetryAfter = false, 0
		if hint == "" {
			hint = runtime.OutcomeUnknownHint
		}
	}
	if hint != "" {
		te.Hint = &RetryHint{Message: hint}
	}
	return te
}
