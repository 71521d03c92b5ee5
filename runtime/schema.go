package runtime

import (
	"encoding/json"
	"fmt"
)

// ConfigSchema is the JSON Schema (draft-07) of a plugin's manifest blocks, from which tool.ManifestSchema and
// `tool schema` build the schema of the whole manifest format for editors. A backend describes its execute block
// (execute.<kind>) and, when it takes one, its top-level block; a receiver (package events) describes its receive
// block. References "#/definitions/<name>" may name the plugin's own Definitions or the manifest's common ones:
// name, template, templateMap, cel, duration, count, httpMethod, jsonPath, body, extractions, jsonSchema and its
// parts.
type ConfigSchema struct {
	// Block is the schema of the block under execute.<kind> (a backend) or receive.<kind> (a receiver).
	Block json.RawMessage `json:"block"`
	// Shared is the schema of the top-level <kind> block; nil when the plugin takes none.
	Shared json.RawMessage `json:"shared,omitempty"`
	// Definitions are named schemas Block and Shared refer to. Two plugins may declare the same name only with
	// the same schema.
	Definitions map[string]json.RawMessage `json:"definitions,omitempty"`
}

// Schemer is implemented by plugins (backends and receivers) that describe their blocks. A plugin without it is
// described as any JSON object. A backend whose schema has no Shared takes no top-level block: Load reports that
// key as unknown. The returned value is shared and must not be modified.
type Schemer interface {
	ConfigSchema() ConfigSchema
}

// MustConfigSchema decodes a ConfigSchema from its JSON form ({"block": ..., "shared": ..., "definitions": {...}}),
// as a plugin embeds it. It panics on a malformed document or one without a block: a programming error that the
// plugin's first test run shows.
func MustConfigSchema(doc []byte) ConfigSchema {
	var s ConfigSchema
	if err := json.Unmarshal(doc, &s); err != nil || len(s.Block) == 0 {
		panic(fmt.Sprintf("runtime: malformed config schema (err %v, block %d bytes)", err, len(s.Block)))
	}
	return s
}
