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
