package runtime

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"sync"

	"github.com/commonagents-go/tool/field"
)

// Expander is implemented by backends whose top-level block declares actions of its own: the operations of an
// OpenAPI document, the tools of an MCP server. The loader calls Expand once at load, after ValidateShared, with
// the top-level block (b.Value is nil, b.Shared holds it), and adds one action per Expanded. A declared action
// of the same name is a load problem; so is an error returned by Expand.
//
// Expand runs within Load's context: fetching a document or listing a server's tools is bounded by it.
type Expander interface {
	Expand(ctx context.Context, b *Block) (*Expansion, error)
}

// Annotator is implemented by backends that learn at load what the source of a declared action says of it (an MCP
// tool's hints and title, from tools/list), setting it on their own prepared actions before Load returns, so that
// the catalog shows it. The loader calls Annotate once per backend that declared actions run on, after Expand,
// whether or not the manifest has a top-level block of its kind: b.Declared holds the prepared actions, b.Shared
// the top-level block (nil when there is none), b.Discover the host's consent to contacting live servers. It is
// not called once the manifest has problems. Annotate runs within Load's context; what it cannot learn is a
// warning, never a problem.
type Annotator interface {
	Annotate(ctx context.Context, b *Block) field.List
}

// Expansion is what a top-level block expands into.
type Expansion struct {
	Actions []Expanded
	// Skipped lists what could not become an action, each with the reason: never drop anything silently.
	Skipped []Skipped
	// Warnings are non-fatal findings (an item renamed to keep names apart, a selection entry that matches
	// nothing): the loader adds them to Tool.Warnings.
	Warnings field.List
	// Unselected counts the items the block's own selection left out: reported in a load fact, not as Skipped.
	Unselected int
}

// Expanded is one action derived from a top-level block.
type Expanded struct {
	// Name is the action name; it follows the manifest's action-name rules.
	Name        string
	Description string
	// Title is the source's human-readable name for it (an MCP tool's title), "" when none.
	Title string
	// Parameters is the action's parameters as a JSON Schema object (type: object, properties, required), with
	// every $ref resolved. The loader checks it like a declared action's parameters (SPEC §3.5). It may share
	// subschemas with the Parameters of the expansion's other actions (an OpenAPI component several operations
	// name): nobody modifies it.
	Parameters map[string]any
	// Schema is the schema the action's arguments are validated against when the source's own schema says more
	// than Parameters can show an LLM: the schema as the source gave it, every keyword kept, $refs as written
	// (an MCP tool's inputSchema). Where it allows properties Parameters does not list, such arguments pass to
	// the action (SPEC §3.1). nil: arguments are validated against Parameters, and undeclared ones are refused.
	Schema map[string]any
	// Dialect is the `$schema` URI of the JSON Schema dialect Parameters and Schema are in when they name none
	// (MCP and OpenAPI 3.1: "https://json-schema.org/draft/2020-12/schema"); "" is draft-07.
	Dialect string
	// Validation, when set, is what the action's arguments are validated against in place of Parameters (and
	// Schema): a schema with Parameters' properties whose `$ref`s name locations of a document the source shares
	// among its actions (Document.Ref), so that the schemas they share are compiled once. Parameters stays the
	// copy shown to an LLM and says which arguments exist.
	Validation *Validation
	// OutputSchema is the JSON Schema of the action's structured output as the source gives it (an MCP tool's
	// outputSchema); nil when none.
	OutputSchema map[string]any
	// Definition is the item as its source lists it, every field as received (an MCP tool's tools/list entry:
	// inputSchema and outputSchema whole, title, icons, _meta), for a gateway to serve it unchanged; nil when the
	// source gives none.
	Definition json.RawMessage
	// Annotations are the catalog hints the source gives (an HTTP GET is read-only); nil when it gives none.
	Annotations *Traits
	// Action is the prepared action, as Prepare would have returned it.
	Action Action
}

// ServerDefaults is implemented by prepared actions whose source-derived parameters carry defaults that describe
// what the server assumes when a value is absent (an OpenAPI `default`): an optional parameter the LLM left out is
// then not sent, its default only shown to the LLM (SPEC §7.5). Parameters a manifest declares itself keep their
// defaults filled in (SPEC §3.1).
type ServerDefaults interface {
	// DefaultsOnServer reports whether the source's defaults are the server's.
	DefaultsOnServer() bool
}

// Skipped names an item of a top-level block that did not become an action, and why.
type Skipped struct {
	// Name identifies the item: an operationId, "GET /pets/{id}" when it has none, or an MCP tool name.
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Validation is an action's argument schema taken from its source document (Expanded.Validation).
type Validation struct {
	// Document is the source document, shared by every action expanded from it.
	Document *SchemaDocument
	// Schema is a JSON Schema object (type: object, properties, required) whose `$ref`s name locations of the
	// document (Document.Ref).
	Schema map[string]any
	// Required: Parameters says less than the document (its source could not read all of it), so the action is
	// skipped when Schema cannot be compiled, rather than validated against Parameters.
	Required bool

	mu       sync.Mutex
	compiled any
}

// Compiled returns the compiled form a loader kept with SetCompiled, nil before: a backend that hands the same
// Validation to another Load (from its document cache) spares it the compile.
func (v *Validation) Compiled() any {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.compiled
}

// SetCompiled keeps the compiled form of v for later Loads.
func (v *Validation) SetCompiled(c any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.compiled = c
}

// SchemaDocument is a decoded JSON document holding the schemas of a source (an OpenAPI description in the JSON
// Schema form its dialect validates): the loader compiles it once for every action that refers into it. It is
// immutable once built and safe for concurrent use.
type SchemaDocument struct {
	// Doc is the decoded JSON document; it is never modified.
	Doc any
	// Dialect is the `$schema` URI of its schemas' dialect; "" is draft-07. Its schemas should sit where the
	// dialect keeps subschemas ($defs, definitions): the validator collects those in one read of the document,
	// and copies its record of the whole document for each other location it is asked for.
	Dialect  string
	once     sync.Once
	compiled any
}

// Ref returns the `$ref` a Validation's schema uses to name the location of the document given by tokens (JSON
// pointer tokens, unescaped).
func (d *SchemaDocument) Ref(tokens ...string) string {
	var b strings.Builder
	b.WriteString(SchemaDocumentURL + "#")
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")))
	}
	return b.String()
}

// SchemaDocumentURL is the base URI a Validation's `$ref`s name the document by. It names no reachable place.
const SchemaDocumentURL = "https://json-schema.org/commonagents-go-tool/document"

// Compiled returns what build returns on its first call for d: the loader keeps the compiled form of the document
// there, so every Load that uses the same SchemaDocument shares it.
func (d *SchemaDocument) Compiled(build func() any) any {
	d.once.Do(func() { d.compiled = build() })
	return d.compiled
}
