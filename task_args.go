package tool

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/commonagents-go/tool/internal/schema"
	"github.com/commonagents-go/tool/runtime"
)

// resolveArgs applies SPEC §3.4 to one call: for each root and action parameter, binding, then LLM argument, then
// default (unless the server applies it: action.serverDefaults, SPEC §7.5); missing required parameters, unknown
// arguments and settings passed as arguments are recoverable errors, and the merged object is validated against the
// schemas. An action whose backend brought its own schema (SPEC §3.1) takes the undeclared arguments that schema
// allows: its schema decides, not the declared list. It returns the resolved arguments and the names of LLM arguments
// ignored because they are bound. args is never modified.
func (t *Task) resolveArgs(a *action, args map[string]any) (map[string]any, []string, *ToolError) {
	var unknown, settings, ignored []string
	for name := range args {
		if _, ok := a.byName[name]; ok {
			if _, bound := t.bindings[name]; bound {
				ignored = append(ignored, name)
			}
			continue
		}
		if _, isSetting := t.tool.settings[name]; isSetting || t.tool.isSetting(name) {
			settings = append(settings, name)
		} else {
			unknown = append(unknown, name)
		}
	}
	if len(settings) > 0 || len(unknown) > 0 && a.whole == nil {
		return nil, nil, t.argumentError(a, settings, unknown)
	}

	resolved := make(map[string]any, len(a.params)+len(unknown))
	var missing []string
	fromLLM := len(unknown) > 0
	for _, name := range unknown {
		resolved[name] = args[name] // a.whole allows them or validateArgs says why not
	}
	for _, p := range a.params {
		if v, ok := t.bindings[p.Name]; ok {
			resolved[p.Name] = v
		} else if v, ok := args[p.Name]; ok && (v != nil || p.Required || allowsNull(p.Schema)) {
			// A null for an optional parameter is its absence (Function.StrictSchema makes optional ones nullable).
			resolved[p.Name] = v
			fromLLM = true
		} else if p.HasDefault && !a.serverDefaults[p.Name] {
			// A default the backend's server applies is not sent (SPEC §7.5): it only tells the LLM.
			resolved[p.Name] = p.Default
		} else if p.Required {
			missing = append(missing, p.Name)
		}
	}
	if len(missing) > 0 {
		return nil, nil, t.missingError(a, missing)
	}
	// Bindings were validated by NewTask and defaults at Load: only LLM values can be wrong, or, under a backend's
	// whole schema, the object as a whole (anyOf, minProperties, dependentRequired).
	if fromLLM || a.whole != nil {
		if err := t.validateArgs(a, resolved); err != nil {
			return nil, nil, err
		}
	}
	sort.Strings(ignored)
	return resolved, ignored, nil
}

// rootOnly reports whether name is a root parameter that the action's own schema does not declare.
func (t *Tool) rootOnly(a *action, name string) bool {
	if t.rootParams == nil {
		return false
	}
	if _, root := t.rootParams.Property(name); !root {
		return false
	}
	_, own := a.own.Property(name)
	return !own
}

// isSetting reports whether name is declared in the settings schema.
func (t *Tool) isSetting(name string) bool {
	if t.settingsSchema == nil {
		return false
	}
	_, ok := t.settingsSchema.Property(name)
	return ok
}

func (t *Task) argumentError(a *action, settings, unknown []string) *ToolError {
	sort.Strings(settings)
	sort.Strings(unknown)
	var parts []string
	if len(settings) > 0 {
		parts = append(parts, fmt.Sprintf("%s cannot be passed as arguments (operator settings)", quoteAll(settings)))
	}
	if len(unknown) > 0 {
		parts = append(parts, fmt.Sprintf("unknown arguments %s", quoteAll(unknown)))
	}
	accepted := t.acceptedNames(a)
	return &ToolError{Kind: runtime.KindInvalidArguments, Message: strings.Join(parts, "; "),
		Hint: &RetryHint{Message: "accepted arguments: " + strings.Join(accepted, ", ")}}
}

// acceptedNames are the arguments the LLM may send for a: its parameters minus the bound ones.
func (t *Task) acceptedNames(a *action) []string {
	names := make([]string, 0, len(a.params))
	for _, p := range a.params {
		if _, bound := t.bindings[p.Name]; !bound {
			names = append(names, p.Name)
		}
	}
	return names
}

func (t *Task) missingError(a *action, missing []string) *ToolError {
	h := &RetryHint{MissingFields: missing, Schemas: make(map[string]json.RawMessage, len(missing)),
		Message: "add the missing arguments and call again"}
	for _, lp := range a.llm.params {
		for _, m := range missing {
			if lp.name == m {
				h.Schemas[m] = json.RawMessage(lp.schema)
			}
		}
	}
	return &ToolError{Kind: runtime.KindMissingFields, Message: "missing required arguments " + quoteAll(missing), Hint: h}
}

// validateArgs checks the resolved arguments against the root and the action schema, each seeing its own
// properties; a backend's whole schema sees every argument but the root's own. Violation details never hold
// values, so secrets cannot leak through them.
func (t *Task) validateArgs(a *action, resolved map[string]any) *ToolError {
	var violations []string
	for _, s := range []*schema.Schema{t.tool.rootParams, a.own} {
		whole := s == a.own && a.whole != nil
		if whole {
			s = a.whole
		}
		if s == nil || s.Satisfied(resolved) {
			continue
		}
		obj := make(map[string]any, len(resolved))
		for name, v := range resolved {
			if _, ok := s.Property(name); ok || whole && !t.tool.rootOnly(a, name) {
				obj[name] = v
			}
		}
		for _, v := range s.Validate(obj) {
			violations = append(violations, v.String())
		}
	}
	if len(violations) == 0 {
		return nil
	}
	sort.Strings(violations)
	return &ToolError{Kind: runtime.KindInvalidArguments, Message: "arguments do not match the schema: " +
		strings.Join(violations, "; "), Hint: &RetryHint{Message: "fix the named arguments and call again"}}
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
