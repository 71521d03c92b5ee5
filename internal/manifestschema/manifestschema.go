// Package manifestschema builds the JSON Schema (draft-07) of the manifest format from its core (core.json: the
// keys the loader itself reads, and the common definitions) and the schemas of the registered plugins, so that the
// schema describes exactly the backends and receivers a host registered, third parties' included.
package manifestschema

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/commonagents-go/tool/runtime"
)

//go:embed core.json
var core []byte

// Plugin is a registered kind and its schema; nil Schema means the plugin describes none (any object).
type Plugin struct {
	Kind   string
	Schema *runtime.ConfigSchema
}

// Build returns the schema of a manifest whose execute blocks are the backends' and whose receive blocks are the
// receivers', indented. A backend's Shared schema becomes its top-level key; a backend without a schema gets an
// open object there. Definitions two plugins declare differently are an error.
func Build(backends, receivers []Plugin) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(core, &doc); err != nil {
		return nil, fmt.Errorf("manifestschema: core: %w", err)
	}
	props := doc["properties"].(map[string]any)
	defs := doc["definitions"].(map[string]any)
	addDefs := func(p Plugin) error {
		for name, raw := range p.Schema.Definitions {
			if prev, ok := defs[name]; ok {
				if !sameJSON(prev, raw) {
					return fmt.Errorf("manifestschema: %s declares definition %q, which another plugin declares differently", p.Kind, name)
				}
				continue
			}
			defs[name] = json.RawMessage(raw)
		}
		return nil
	}
	open := map[string]any{"type": "object"}
	oneOf := func(def string, plugins []Plugin, top bool) error {
		d := defs[def].(map[string]any)
		kinds := map[string]any{}
		var one []any
		for _, p := range plugins {
			if _, core := props[p.Kind]; core && top {
				return fmt.Errorf("manifestschema: kind %q is a core manifest key", p.Kind)
			}
			block, shared := any(open), any(open)
			if p.Schema != nil {
				if err := addDefs(p); err != nil {
					return err
				}
				block, shared = json.RawMessage(p.Schema.Block), nil
				if len(p.Schema.Shared) > 0 {
					shared = json.RawMessage(p.Schema.Shared)
				}
			}
			kinds[p.Kind] = block
			one = append(one, map[string]any{"required": []string{p.Kind}})
			if top && shared != nil {
				props[p.Kind] = shared
			}
		}
		d["properties"], d["oneOf"] = kinds, one
		return nil
	}
	sortPlugins(backends)
	sortPlugins(receivers)
	if err := oneOf("execute", backends, true); err != nil {
		return nil, err
	}
	if err := oneOf("receive", receivers, false); err != nil {
		return nil, err
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("manifestschema: %w", err)
	}
	return append(out, '\n'), nil
}

func sortPlugins(ps []Plugin) {
	slices.SortFunc(ps, func(a, b Plugin) int {
		switch {
		case a.Kind < b.Kind:
			return -1
		case a.Kind > b.Kind:
			return 1
		}
		return 0
	})
}

// sameJSON reports whether a decoded value and a raw JSON document are the same JSON.
func sameJSON(decoded any, raw json.RawMessage) bool {
	a, err1 := json.Marshal(decoded)
	var v any
	err2 := json.Unmarshal(raw, &v)
	b, err3 := json.Marshal(v)
	return err1 == nil && err2 == nil && err3 == nil && bytes.Equal(a, b)
}
