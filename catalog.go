package tool

import (
	"encoding/json"

	"github.com/commonagents-go/tool/runtime"
)

// CatalogEntry describes one action for a host's tool inventory (SPEC §11), in the shape of the
// tool.catalog.resolved fact.
type CatalogEntry struct {
	// Function is the LLM-facing function name: Function.Name and Result.Function for the same action. Its JSON
	// key is SPEC §11's tool_name.
	Function    string          `json:"tool_name"`
	Action      string          `json:"action"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	// Title is the human-readable name the action's source gives it (an MCP tool's title); "" when none.
	Title string `json:"title,omitempty"`
	// OutputSchema is the JSON Schema of the action's structured output, as its source gives it (an MCP tool's
	// outputSchema); nil when none.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Capabilities []string        `json:"capabilities"`
	// Policy is "allowed"; "ask" when each call needs approval (Capability.Approve); or "denied" with
	// PolicyReason when the capability does not include the action.
	Policy       string `json:"policy"`
	PolicyReason string `json:"policy_reason,omitempty"`
	// RuntimeOwner is "local", "http", "mcp_server", "kubernetes" or "subprocess".
	RuntimeOwner      string `json:"runtime_owner"`
	IsReadOnly        bool   `json:"is_read_only"`
	IsDestructive     bool   `json:"is_destructive"`
	IsIdempotent      bool   `json:"is_idempotent"`
	IsConcurrencySafe bool   `json:"is_concurrency_safe"`
	IsOpenWorld       bool   `json:"is_open_world"`
	// InterruptBehavior is "cancel" (Task.Interrupt cancels a running call) or "block" (it finishes).
	InterruptBehavior string `json:"interrupt_behavior"`
}

// Catalog returns one entry per action of the tool, included or not, in manifest order. Flags come from the
// action's annotations, else from its backend (HTTP GET and HEAD are read-only and idempotent, cel is read-only,
// anything unknown is destructive).
func (t *Tool) Catalog(c Capability) []CatalogEntry {
	out := make([]CatalogEntry, 0, len(t.actions))
	for _, a := range t.actions {
		tr := a.traits()
		e := CatalogEntry{
			Function:          t.functionName(c, a),
			Action:            a.def.Name,
			Description:       a.def.Description,
			InputSchema:       a.llmSchema(c.Bindings),
			Title:             a.title,
			OutputSchema:      a.outputSchema,
			Capabilities:      tr.Capabilities,
			Policy:            "allowed",
			RuntimeOwner:      tr.Owner,
			IsReadOnly:        tr.ReadOnly,
			IsDestructive:     tr.Destructive,
			IsIdempotent:      tr.Idempotent,
			IsConcurrencySafe: tr.ConcurrencySafe,
			IsOpenWorld:       tr.OpenWorld,
			InterruptBehavior: "block",
		}
		if e.Capabilities == nil {
			e.Capabilities = []string{}
		}
		if !c.includes(a.def.Name) {
			e.Policy, e.PolicyReason = "denied", "the capability's include list does not name this action"
		} else if c.approves(a.def.Name) {
			e.Policy, e.PolicyReason = "ask", "each call waits for the task's Approver"
		}
		if an := a.def.Annotations; an != nil && an.InterruptBehavior != "" {
			e.InterruptBehavior = an.InterruptBehavior
		}
		out = append(out, e)
	}
	return out
}

// traits are the action's catalog flags: derived from the backend, then overridden by annotations.
func (a *action) traits() runtime.Traits {
	tr := runtime.Traits{Destructive: true, Owner: "local"}
	if d, ok := a.prepared.(runtime.Describer); ok {
		tr = d.Traits()
	}
	an := a.def.Annotations
	if an == nil {
		return tr
	}
	set := func(dst *bool, v *bool) {
		if v != nil {
			*dst = *v
		}
	}
	set(&tr.ReadOnly, an.ReadOnly)
	set(&tr.Destructive, an.Destructive)
	set(&tr.Idempotent, an.Idempotent)
	set(&tr.ConcurrencySafe, an.ConcurrencySafe)
	set(&tr.OpenWorld, an.OpenWorld)
	if an.ReadOnly != nil && *an.ReadOnly && an.Destructive == nil {
		tr.Destructive = false
	}
	if an.Capabilities != nil {
		tr.Capabilities = an.Capabilities
	}
	return tr
}
