package runtime

import "context"

// ElicitRequest is a server's request, during a call, for input from the user (MCP elicitation/create, form
// mode): Message says what is asked and why, Schema is the JSON Schema of the answer.
type ElicitRequest struct {
	Message string
	Schema  map[string]any
}

// The actions of an ElicitResult.
const (
	ElicitAccept  = "accept"
	ElicitDecline = "decline"
	ElicitCancel  = "cancel"
)

// ElicitResult is the user's answer: Action is ElicitAccept with Content, ElicitDecline or ElicitCancel. Fields of
// the schema that an accepted Content leaves out take the schema's defaults (SEP-1034).
type ElicitResult struct {
	Action  string
	Content map[string]any
}

// ElicitFunc asks the host's user; nil when the host has no hook, and the request is then refused.
type ElicitFunc func(ctx context.Context, req ElicitRequest) (ElicitResult, error)

// SampleMessage is one message of a sampling request or its answer: a role ("user", "assistant") and a content
// block.
type SampleMessage struct {
	Role    string
	Content Content
}

// SampleRequest is a server's request, during a call, for an LLM completion (MCP sampling/createMessage).
type SampleRequest struct {
	Messages     []SampleMessage
	SystemPrompt string
	MaxTokens    int
}

// SampleResult is the completion: the message, the model that made it and why it stopped.
type SampleResult struct {
	Message    SampleMessage
	Model      string
	StopReason string
}

// SampleFunc asks the host's LLM; nil when the host has no hook, and the request is then refused.
type SampleFunc func(ctx context.Context, req SampleRequest) (SampleResult, error)
