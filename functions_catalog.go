package tool

import (
	"github.com/commonagents-go/tool/runtime"
)

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
