package tool

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// ManifestKind is the only manifest kind this library loads: the value of a manifest's kind key.
const ManifestKind = "commonagents.info/v1beta2/tool"

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

	// Shared holds the top-level backend blocks, keyed by backend kind (stateless_http, openapi, mcp, a third
	// party's kind, ...): configuration inherited by every action on that backend, or a description that expands
	// into actions (SPEC §7.5, §7.6). Load accepts a top-level key that is not one of the fields above only when a
	// backend of that kind is registered. In JSON the blocks are top-level keys, as in the manifest.
	Shared map[string]json.RawMessage `json:"-"`
}

// coreKeys are the manifest keys the loader reads itself, from Manifest's json tags; registry.Reserved must list
// the same (TestCoreKeysAreReserved).
var coreKeys = func() map[string]bool {
	keys := map[string]bool{}
	t := reflect.TypeFor[manifestFields]()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			keys[name] = true
		}
	}
	return keys
}()

// manifestFields is Manifest without its methods, for encoding.
type manifestFields Manifest

// MarshalJSON encodes the manifest with its shared blocks as top-level keys.
func (m Manifest) MarshalJSON() ([]byte, error) {
	core, err := json.Marshal(manifestFields(m))
	if err != nil || len(m.Shared) == 0 {
		return core, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(core, &all); err != nil {
		return nil, err
	}
	for kind, block := range m.Shared {
		if coreKeys[kind] {
			return nil, fmt.Errorf("tool: manifest: shared block %q is a core key", kind)
		}
		all[kind] = block
	}
	return json.Marshal(all)
}

// UnmarshalJSON decodes a manifest, putting every top-level key that is not a core field into Shared. (Load
// decodes strictly instead: an unregistered key is a problem there.)
func (m *Manifest) UnmarshalJSON(data []byte) error {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return err
	}
	var shared map[string]json.RawMessage
	for k, v := range all {
		if !coreKeys[k] {
			if shared == nil {
				shared = map[string]json.RawMessage{}
			}
			shared[k] = v
		}
	}
	if err := json.Unmarshal(data, (*manifestFields)(m)); err != nil {
		return err
	}
	m.Shared = shared
	return nil
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
