package tool

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/commonagents-go/tool/internal/funcname"
	"github.com/commonagents-go/tool/internal/schema"
)

// Capability is how an agent uses a tool: the agent-side facts the library needs (SPEC §0, §3.3).
type Capability struct {
	// Key is the agent's capability key; "" means the tool name. It prefixes function names.
	Key string
	// Include lists the actions and events the agent uses: nil means all, empty means none.
	Include []string
	// Bindings maps parameter names to resolved values. A bound parameter is hidden from the LLM and its value
	// always wins.
	Bindings map[string]any
	// EventTimeout overrides the events' timeout (SPEC §9.5); 0 keeps the tool's.
	EventTimeout time.Duration
	// Approve names the actions whose calls wait for TaskConfig.Approver before they run; "*" means all. Their
	// catalog policy is "ask".
	Approve []string
}

// Function is an action as the LLM sees it (SPEC §3.5). Parameters is a JSON Schema of type object, accepted as
// is by OpenAI (`parameters`), Anthropic (`input_schema`) and MCP (`inputSchema`) tool definitions. It keeps the
// `$schema` of the schema it comes from (a manifest's parameters, an MCP tool's inputSchema), if that names one.
type Function struct {
	Name        string          `json:"name"`
	Action      string          `json:"-"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	// Source is the definition the action was discovered from, every field as its source gave it (an MCP tool's
	// tools/list entry: inputSchema and outputSchema whole, with $schema, $defs, $ref, allOf and conditionals,
	// title, icons, _meta): what a gateway serves. Parameters is the copy an LLM vendor takes, which may allow
	// more than Source's schema, never less; a call it allows that Source's schema refuses is refused naming the
	// keyword. nil for an action the manifest declares, and when Capability.Bindings binds one of its
	// parameters (Source would show it).
	Source json.RawMessage `json:"-"`
}

// includes reports whether the capability uses the action or event name.
func (c Capability) includes(name string) bool {
	if c.Include == nil {
		return true
	}
	for _, n := range c.Include {
		if n == name {
			return true
		}
	}
	return false
}

// Functions returns one function per action the capability includes, in manifest order (SPEC §3.5). Names are
// the capability key, plus "_" and the action name when the tool has several actions, each cleaned (characters
// outside [A-Za-z0-9_] become "_", runs of "_" collapse, "_" at the ends is trimmed); a name over 64 characters
// keeps its first 55 and ends with "_" and 8 hex digits of a hash of the whole, so every name matches
// ^[A-Za-z0-9_-]{1,64}$ and stays the same from one Load to the next.
// Bound parameters are left out of the schemas. Functions is cheap: schemas are prepared at Load.
func (t *Tool) Functions(c Capability) []Function {
	out := make([]Function, 0, len(t.actions))
	for _, a := range t.actions {
		if !c.includes(a.def.Name) {
			continue
		}
		out = append(out, Function{
			Name:        t.functionName(c, a),
			Action:      a.def.Name,
			Description: a.def.Description,
			Parameters:  a.llmSchema(c.Bindings),
			Source:      a.source(c.Bindings),
		})
	}
	return out
}

// functionTable returns the capability's functions by LLM-facing name and those names in manifest order. They
// depend only on the capability's Key and Include, so tasks with the same ones share one read-only table, built
// once per Tool.
func (t *Tool) functionTable(c Capability) (map[string]*action, []string) {
	key := c.Key + "\x00" + strings.Join(c.Include, "\x00")
	if c.Include == nil {
		key += "\x01" // nil (all) differs from empty (none)
	}
	if ft, ok := t.funcTables.Load(key); ok {
		ft := ft.(*funcTable)
		return ft.byName, ft.names
	}
	ft := &funcTable{byName: map[string]*action{}}
	for _, a := range t.actions {
		if c.includes(a.def.Name) {
			name := t.functionName(c, a)
			ft.byName[name] = a
			ft.names = append(ft.names, name)
		}
	}
	if t.funcTableCount.Add(1) > maxFuncTables { // hosts that vary keys per task: no unbounded cache
		return ft.byName, ft.names
	}
	actual, _ := t.funcTables.LoadOrStore(key, ft)
	return actual.(*funcTable).byName, actual.(*funcTable).names
}

// maxFuncTables bounds the function tables a Tool keeps.
const maxFuncTables = 1024

// funcTable is a capability's function table (Tool.functionTable); never modified once stored.
type funcTable struct {
	byName map[string]*action
	names  []string
}

// functionName follows internal/funcname's rule: it always matches ^[A-Za-z0-9_-]{1,64}$, a longer name ending
// in a stable hash of the whole.
func (t *Tool) functionName(c Capability, a *action) string {
	key := c.Key
	if key == "" || key == t.manifest.Name {
		if a.function != "" { // computed once at load (Tool.index)
			return a.function
		}
		key = t.manifest.Name
	}
	if len(t.actions) > 1 {
		return funcname.Join(key, a.def.Name)
	}
	return funcname.Join(key)
}

// llmParam is one parameter of an action's LLM schema, encoded once at Load.
type llmParam struct {
	name     string
	key      []byte // the JSON-encoded name
	schema   []byte // the JSON-encoded property schema, extension keywords removed
	required bool
}

// llmSchemas holds what an action's LLM schema is built from.
type llmSchemas struct {
	params  []llmParam
	defs    []byte // `,"definitions":{...}` or empty
	dialect []byte // the encoded `$schema` to keep, or nil
	full    json.RawMessage
}

// prepareLLM encodes the parameters of a once, so Functions only joins bytes. Property schemas come from the
// compiled schemas' effective documents, which no longer hold extension keywords (require_binding, x-*).
func (a *action) prepareLLM(root *schema.Schema) {
	s := &llmSchemas{}
	for _, p := range a.params {
		prop := effectiveProperty(p.Name, a.own, root)
		key, _ := json.Marshal(p.Name)
		enc, err := json.Marshal(prop)
		if err != nil {
			continue
		}
		s.params = append(s.params, llmParam{name: p.Name, key: key, schema: enc, required: p.Required})
	}
	s.defs = definitions(root, a.own)
	s.dialect = dialectOf(a.own, root)
	a.llm = s
	s.full = s.build(nil)
}

// dialectOf returns the encoded `$schema` the LLM schema keeps (SPEC §3.1: served as received): the action
// schema's, else the root's when the action's is in the same dialect; nil when neither names one.
func dialectOf(own, root *schema.Schema) []byte {
	uri := ""
	switch {
	case own != nil && own.SchemaURI() != "":
		uri = own.SchemaURI()
	case root != nil && (own == nil || own.Dialect() == root.Dialect()):
		uri = root.SchemaURI()
	}
	if uri == "" {
		return nil
	}
	enc, _ := json.Marshal(uri)
	return enc
}

// effectiveProperty returns the cleaned schema of the named property from the first schema that declares it.
func effectiveProperty(name string, schemas ...*schema.Schema) any {
	for _, s := range schemas {
		if s == nil {
			continue
		}
		if props, ok := s.Doc()["properties"].(map[string]any); ok {
			if prop, ok := props[name]; ok {
				return prop
			}
		}
	}
	return map[string]any{}
}

// definitions carries the local `definitions` and `$defs` of the root and action schemas into the merged schema,
// so `$ref`s inside properties still resolve.
func definitions(schemas ...*schema.Schema) []byte {
	merged := map[string]map[string]any{}
	for _, s := range schemas {
		if s == nil {
			continue
		}
		for _, kw := range []string{"definitions", "$defs"} {
			defs, ok := s.Doc()[kw].(map[string]any)
			if !ok {
				continue
			}
			if merged[kw] == nil {
				merged[kw] = map[string]any{}
			}
			for k, v := range defs {
				merged[kw][k] = v
			}
		}
	}
	var b bytes.Buffer
	for _, kw := range []string{"$defs", "definitions"} {
		if merged[kw] == nil {
			continue
		}
		enc, _ := json.Marshal(merged[kw])
		b.WriteString(`,"` + kw + `":`)
		b.Write(enc)
	}
	return b.Bytes()
}

// llmSchema returns the action's LLM schema with bound parameters removed.
func (a *action) llmSchema(bindings map[string]any) json.RawMessage {
	if len(bindings) == 0 {
		return a.llm.full
	}
	hides := false
	for _, p := range a.llm.params {
		if _, bound := bindings[p.name]; bound {
			hides = true
			break
		}
	}
	if !hides {
		return a.llm.full
	}
	return a.llm.build(bindings)
}

func (s *llmSchemas) build(bindings map[string]any) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	if s.dialect != nil {
		b.WriteString(`"$schema":`)
		b.Write(s.dialect)
		b.WriteByte(',')
	}
	b.WriteString(`"type":"object","properties":{`)
	first := true
	for _, p := range s.params {
		if _, bound := bindings[p.name]; bound {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.Write(p.key)
		b.WriteByte(':')
		b.Write(p.schema)
	}
	b.WriteString(`},"required":[`)
	first = true
	for _, p := range s.params {
		if _, bound := bindings[p.name]; bound || !p.required {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.Write(p.key)
	}
	b.WriteString(`],"additionalProperties":false`)
	b.Write(s.defs)
	b.WriteByte('}')
	return b.Bytes()
}

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

// AnthropicInputSchema is a function's schema in the three parts Anthropic's Messages API tool definition takes
// (anthropic-sdk-go's ToolInputSchemaParam: Properties, Required and ExtraFields). Nothing is lost: every other
// keyword of the root schema ($defs, additionalProperties, allOf, ...) is in Extra.
type AnthropicInputSchema struct {
	Properties map[string]any // never nil
	Required   []string
	Extra      map[string]any // the root's other keywords, "type" aside; nil when there are none
}

// source is the action's definition as its source gave it, nil when bindings bind one of its parameters.
func (a *action) source(bindings map[string]any) json.RawMessage {
	if a.definition == nil {
		return nil
	}
	for name := range bindings {
		if _, ok := a.byName[name]; ok {
			return nil
		}
	}
	return a.definition
}
