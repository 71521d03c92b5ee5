package tool

import "encoding/json"

// ManifestKind is the only manifest kind this library loads: the value of a manifest's kind key.
const ManifestKind = "commonagents.info/v1beta2/tool"

// Kind is the former name of ManifestKind, which it equals.
//
// Deprecated: use ManifestKind. Kind read as an error kind beside KindTimeout and the other ToolError kinds.
const Kind = ManifestKind

// Manifest is a decoded tool manifest (SPEC §1). Load fills it strictly: every key of the source maps to a field
// here, and unknown keys are load problems. A Manifest obtained from Tool.Manifest is shared and must not be
// modified.
//
// Blocks whose shape belongs to a backend (execute and receive blocks, the shared top-level runtime blocks) are
// kept as raw JSON: each backend decodes and validates its own block when the manifest loads.
type Manifest struct {
	Kind        string `json:"kind"`
	Namespace   string `json:"namespace"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Synchronous bool   `json:"synchronous,omitempty"`

	// Settings is the JSON Schema of the operator-supplied settings (SPEC §3.2).
	Settings json.RawMessage `json:"settings,omitempty"`
	// Parameters is the JSON Schema of the parameters shared by every action and event (SPEC §3).
	Parameters json.RawMessage `json:"parameters,omitempty"`

	Actions []Action `json:"actions,omitempty"`
	Events  []Event  `json:"events,omitempty"`

	// Shared top-level runtime blocks: configuration inherited by every action that uses the same backend.
	StatelessHTTP   json.RawMessage `json:"stateless_http,omitempty"`
	StatefulSession json.RawMessage `json:"stateful_session,omitempty"`
	OpenAPI         json.RawMessage `json:"openapi,omitempty"`
	MCP             json.RawMessage `json:"mcp,omitempty"`
	KubernetesJob   json.RawMessage `json:"kubernetes_job,omitempty"`
	// Exec is this library's extension: a shared block for the exec (subprocess) backend (SPEC §7.8).
	Exec json.RawMessage `json:"exec,omitempty"`
}

// Action is one function the LLM can call.
type Action struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	// Execute holds exactly one backend block, keyed by the backend's kind (cel, stateless_http, ...).
	Execute map[string]json.RawMessage `json:"execute"`
	// Annotations is this library's extension describing the action to hosts (SPEC §11).
	Annotations *Annotations `json:"annotations,omitempty"`
}

// Annotations describe an action for the catalog (SPEC §11). An unset flag is derived from the backend.
type Annotations struct {
	ReadOnly          *bool    `json:"read_only,omitempty"`
	Destructive       *bool    `json:"destructive,omitempty"`
	Idempotent        *bool    `json:"idempotent,omitempty"`
	ConcurrencySafe   *bool    `json:"concurrency_safe,omitempty"`
	OpenWorld         *bool    `json:"open_world,omitempty"`
	InterruptBehavior string   `json:"interrupt_behavior,omitempty"` // "cancel" or "block" (default)
	Capabilities      []string `json:"capabilities,omitempty"`       // read, write, network, shell, ...
}

// Event is one kind of inbound signal that wakes a task.
type Event struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Message is the template rendered into the activation (SPEC §4.2).
	Message    string          `json:"message"`
	Timeout    string          `json:"timeout,omitempty"`
	MaxTimeout string          `json:"max_timeout,omitempty"`
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// Receive holds exactly one receive block, keyed by its type (webhook, subscription, poll).
	Receive map[string]json.RawMessage `json:"receive"`
}
