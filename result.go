package tool

import (
	"encoding/json"
	"net/http"
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

// The reasons a delivery is discarded for an event (SPEC §9.1), in Discard.Reason.
const (
	ReasonBadSignature   = "bad_signature"    // the signature is missing, malformed, stale or wrong
	ReasonFilterFalse    = "filter_false"     // no assignment made the filter true, or it failed only on a missing payload field
	ReasonEmptyAllowList = "empty_allow_list" // the filter references a parameter with no allow-listed value
	ReasonFilterError    = "filter_error"     // the filter or an extraction failed to evaluate
	ReasonExcluded       = "excluded"         // the capability's Include leaves the event out
	ReasonExpired        = "expired"          // the event's timeout passed without task activity (SPEC §9.5)
	ReasonInterrupted    = "interrupted"      // the task is interrupted (Task.Interrupt)
	ReasonDuplicate      = "duplicate"        // the delivery id was already activated within the dedupe window
	ReasonInFlight       = "in_flight"        // an attempt with the same delivery id is still with a Sink (503: retry later)
	ReasonMisconfigured  = "misconfigured"    // the event cannot take pushed payloads as configured
	// ReasonTooComplex: the JSON payload nests deeper than Limits.InboundDepth or holds more values than
	// Limits.InboundValues; it was not parsed.
	ReasonTooComplex = "payload_too_complex"
)

// Inbound is one payload pushed to the host for a tool (SPEC §9.1).
type Inbound struct {
	// Event, when set, restricts delivery to the event of that name.
	Event string
	// Headers are the request's headers; signatures and the delivery id are read from them.
	Headers http.Header
	// Body is the raw body: signatures are computed over these exact bytes. A JSON body is the payload; any
	// other body is exposed as text.
	Body []byte
	// DeliveryID identifies the delivery for deduplication; "" takes it from X-GitHub-Delivery or webhook-id.
	DeliveryID string
	// ReceivedAt is when the host received the payload; zero means now, by the tool's Clock.
	ReceivedAt time.Time
}

// Delivery is what one task did with an Inbound: the activations its Sink accepted (or, without a Sink, that it
// produced) and every event that discarded the payload, with the reason.
type Delivery struct {
	// TaskID is the task that did it; "" for a Router's report of discards decided for every task.
	TaskID      string       `json:"task_id,omitempty"`
	Activations []Activation `json:"activations"`
	Discarded   []Discard    `json:"discarded"`
}

// Discard is one event that did not activate, and why.
type Discard struct {
	Event string `json:"event"`
	// Reason is one of the Reason constants.
	Reason string `json:"reason"`
	// Detail explains Reason when there is more to say (a filter's error, the bad signature's cause). It never
	// holds a secret.
	Detail string `json:"detail,omitempty"`
}

// Activation is an event that woke a task up (SPEC §9.1).
type Activation struct {
	// ID is stable per task, event and delivery (the delivery id, else the body) or polled item: every retry of a
	// delivery and every re-fire of an item carries the same ID, so a Sink can deduplicate what at-least-once
	// delivery hands it twice (docs/guarantees.md).
	ID     string `json:"id"`
	TaskID string `json:"task_id"`
	Tool   string `json:"tool"`
	Event  string `json:"event"`
	// Message is the event's rendered message: the input the task receives.
	Message string `json:"message"`
	// DeliveryID is the sender's delivery id; "" when it gave none.
	DeliveryID string `json:"delivery_id,omitempty"`
	// Payload is the parsed JSON body, or the body as text when it is not JSON.
	Payload any `json:"payload"`
	// Parameters are the task's bindings and the allow-listed values that made the filter true.
	Parameters map[string]any `json:"parameters"`
	ReceivedAt time.Time      `json:"received_at"`
}
