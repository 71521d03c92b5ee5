package temporaltool

import (
	"encoding/json"
	"time"
)

// Version is the version of the activity inputs and outputs this package writes, in their V field. An activity
// takes V 0 (a value written without it) or Version, and fails a newer one with a non-retryable ErrorInvalid, so
// that a worker older than the workflow's code never guesses at a field it does not know.
const Version = 1

// TaskRef names a task as the Store and the Router do: the tool's namespace and name, and the task ID (by
// convention the workflow ID).
type TaskRef struct {
	Namespace string `json:"namespace"`
	Tool      string `json:"tool"`
	ID        string `json:"id"`
}

// StartInput is the input of the StartTask activity.
type StartInput struct {
	V    int     `json:"v"`
	Task TaskRef `json:"task"`
	// ExpiresAt is when the task ends by itself if no Close comes (a terminated workflow skips its Close): set it
	// at the workflow's execution timeout plus a margin. Zero: never.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// MustExist makes StartTask lend a stored task and never create one: for a run that SignalWithStart began
	// for a task whose conversation had ended.
	MustExist bool `json:"must_exist,omitempty"`
}

// TaskInfo is what the workflow knows of its task, read once by StartTask (or Functions) on a worker and
// recorded in the history, so that a replay sees the same.
type TaskInfo struct {
	V         int            `json:"v"`
	Functions []FunctionInfo `json:"functions"`
	// EventTimeouts are the timeouts of the events the task waits for (SPEC §9.5), by event name: the durable
	// timer Events.Next takes. An event without a timeout is absent.
	EventTimeouts map[string]time.Duration `json:"event_timeouts,omitempty"`
}

// FunctionInfo is one function the model may call, with the traits the workflow may act on.
type FunctionInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"` // a JSON Schema object
	// Idempotent and ReadOnly as the catalog says (docs/guarantees.md, "Outbound calls"): a call that is neither
	// is sent by at most one attempt.
	Idempotent bool `json:"idempotent,omitempty"`
	ReadOnly   bool `json:"read_only,omitempty"`
	// ConcurrencySafe: calls of it may run at the same time as other calls of the task.
	ConcurrencySafe bool `json:"concurrency_safe,omitempty"`
}

// Call is the input of the Invoke activity: one function call of the model.
type Call struct {
	V    int     `json:"v"`
	Task TaskRef `json:"task"`
	// CallID is the model's tool-call id, else one the workflow makes unique within the run (the Invoke helper
	// uses it as the activity ID); the library's facts and spans carry it.
	CallID   string          `json:"call_id"`
	Function string          `json:"function"`
	Args     json.RawMessage `json:"args,omitempty"`
}

// Outcome is the result of one call, as the model should see it.
type Outcome struct {
	V        int    `json:"v"`
	CallID   string `json:"call_id"`
	Function string `json:"function"`
	// Text is what the model reads: the result's text (tool.Result.Text), or {"omitted": reason} when it was over
	// Activities.MaxResultBytes.
	Text    string     `json:"text"`
	IsError bool       `json:"is_error,omitempty"`
	Error   *ErrorInfo `json:"error,omitempty"`
	// OutputBytes is the size of the output before any omission; Omitted says it was omitted, by the library's
	// result budget (Limits.ResultBytes) or by Activities.MaxResultBytes, and OmittedReason why.
	OutputBytes   int    `json:"output_bytes"`
	Omitted       bool   `json:"omitted,omitempty"`
	OmittedReason string `json:"omitted_reason,omitempty"`
	// Attempt is the activity attempt that produced the outcome.
	Attempt int32 `json:"attempt"`
}

// ErrorInfo is a recoverable failure of a call (tool.ToolError), JSON-safe.
type ErrorInfo struct {
	Kind           string        `json:"kind"`
	Message        string        `json:"message"`
	Retryable      bool          `json:"retryable,omitempty"`
	RetryAfter     time.Duration `json:"retry_after,omitempty"`
	OutcomeUnknown bool          `json:"outcome_unknown,omitempty"`
	Hint           string        `json:"hint,omitempty"`
}

// Activation is the signal a SignalSink sends: a tool.Activation without its Payload and Parameters (they may
// be large, and are not the model's input; Message is).
type Activation struct {
	V          int       `json:"v"`
	ID         string    `json:"id"`
	TaskID     string    `json:"task_id"`
	Tool       string    `json:"tool"`
	Event      string    `json:"event"`
	Message    string    `json:"message"`
	DeliveryID string    `json:"delivery_id,omitempty"`
	ReceivedAt time.Time `json:"received_at,omitzero"`
}
