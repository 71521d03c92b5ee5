package tool

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"time"

	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/internal/funcname"
	"github.com/commonagents-go/tool/internal/schema"
	"github.com/commonagents-go/tool/runtime"
)

// action is one loaded action: its backend, its prepared block and its merged parameters.
type action struct {
	def      *Action
	kind     string
	backend  runtime.Runtime
	prepared runtime.Action
	// params are the parameters of a call: root then action, merged, sorted by name.
	params []schema.Property
	own    *schema.Schema
	// whole is the backend's own schema when it says more than own (runtime.Expanded.Schema): arguments are
	// validated against it, and the ones it allows beyond the declared parameters pass (SPEC §3.1).
	whole *schema.Schema
	llm   *llmSchemas
	// serverDefaults are the optional parameters the backend's source gave a default that its server applies
	// (runtime.ServerDefaults): left out by the LLM, they are not sent (SPEC §7.5).
	serverDefaults map[string]bool

	// Derived at load for calls.
	byName            map[string]int // index in params
	shared            bool           // read-only and concurrency-safe: runs alongside other such calls (SPEC §11)
	cancelOnInterrupt bool           // interrupt_behavior: cancel — Task.Interrupt cancels its running calls
	retrySafe         bool           // idempotent or read-only: a request that may have arrived can be sent again
	function          string         // the LLM-facing name under the manifest's name (no Capability.Key)
	bound             time.Duration  // the bound of a call, made by the task (Tool.boundOf); 0: the backend's own
	contextReads      []contextRead  // the keys of TaskConfig.Context every call reads (NewTask checks them)

	// From the action's source (runtime.Expanded), for the catalog.
	title        string          // its human-readable name
	outputSchema json.RawMessage // its output schema
	definition   json.RawMessage // its definition as the source gave it (runtime.Expanded.Definition)
}

func (a *action) index() {
	a.byName = make(map[string]int, len(a.params))
	for i, p := range a.params {
		a.byName[p.Name] = i
	}
	tr := a.traits()
	a.shared = tr.ReadOnly && tr.ConcurrencySafe
	a.retrySafe = tr.ReadOnly || tr.Idempotent
	a.cancelOnInterrupt = a.def.Annotations != nil && a.def.Annotations.InterruptBehavior == "cancel"
}

// coreOf splits the manifest's top level: a key of a registered backend that is not a core key goes into
// l.m.Shared (re-encoded), and the rest is returned for strict decoding, where an unknown key is a problem that
// names it. The built-in backends' blocks take this path as a third party's do.
func (l *loader) coreOf(root map[string]any, doc any) any {
	if root == nil {
		return doc
	}
	rest := make(map[string]any, len(root))
	for key, v := range root {
		if backend, registered := l.opts.runtimes.Lookup(key); registered && !coreKeys[key] && takesShared(backend) {
			if v == nil {
				continue
			}
			raw, err := json.Marshal(v)
			if err != nil {
				l.errs.Add(field.Invalid(field.NewPath(key), "cannot encode the block: %v", err))
				continue
			}
			if l.m.Shared == nil {
				l.m.Shared = map[string]json.RawMessage{}
			}
			l.m.Shared[key] = raw
			continue
		}
		if _, known := knownPackages[key]; known && !coreKeys[key] { // a built-in the host did not import
			l.errs.Add(unknownKind(field.NewPath(key), "backend", key, l.opts.runtimes.Kinds()))
			continue
		}
		rest[key] = v
	}
	return rest
}

// takesShared reports whether a backend reads a top-level block: one that describes its blocks (runtime.Schemer)
// says so with a Shared schema; one that does not may (its Prepare sees Block.Shared).
func takesShared(backend runtime.Runtime) bool {
	s, ok := backend.(runtime.Schemer)
	return !ok || len(s.ConfigSchema().Shared) > 0
}

// sharedBlocks lists the kinds of the manifest's top-level backend blocks, sorted.
func sharedBlocks(m *Manifest) []string {
	return slices.Sorted(maps.Keys(m.Shared))
}

func (l *loader) actions(root map[string]any, docs []any) []*action {
	out := make([]*action, 0, len(l.m.Actions))
	for i := range l.m.Actions {
		def := &l.m.Actions[i]
		p := field.NewPath("actions").Index(i)
		doc, _ := asMap(docs[i])
		a := &action{def: def}
		if def.Description == "" {
			l.errs.Add(field.Required(p.Child("description"), "description is required: the LLM reads it to choose the action"))
		}
		var ownProps []schema.Property
		a.own, ownProps = l.schema(doc["parameters"], p.Child("parameters"))
		a.params = l.mergeParams(p, ownProps)
		l.annotations(p.Child("annotations"), def.Annotations)
		l.prepareAction(root, doc, p, a)
		a.prepareLLM(l.rootParams)
		out = append(out, a)
	}
	l.functionNames()
	return out
}

// functionNames reports actions whose LLM-facing names would be the same (SPEC §3.5 maps every character outside
// [A-Za-z0-9_] to "_", so get-item and get_item collide): the LLM could not tell them apart.
func (l *loader) functionNames() {
	seen := map[string]string{}
	for i, a := range l.m.Actions {
		name := funcname.Clean(a.Name)
		if first, dup := seen[name]; dup && first != a.Name {
			l.errs.Add(field.Duplicate(field.NewPath("actions").Index(i).Child("name"),
				"action %q and action %q both become the function name suffix %q", first, a.Name, name))
			continue
		}
		seen[name] = a.Name
	}
}

// mergeParams merges root and action properties; a name defined differently at both levels is a problem.
func (l *loader) mergeParams(p *field.Path, own []schema.Property) []schema.Property {
	byName := map[string]schema.Property{}
	for _, prop := range l.rootProperties {
		byName[prop.Name] = prop
	}
	{
		for _, prop := range own {
			if rootProp, dup := byName[prop.Name]; dup && !reflect.DeepEqual(rootProp.Schema, prop.Schema) {
				l.errs.Add(field.Invalid(p.Child("parameters", "properties").Key(prop.Name),
					"parameter %q is also declared at the root with a different definition", prop.Name))
				continue
			}
			byName[prop.Name] = prop
		}
	}
	out := make([]schema.Property, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[name])
	}
	return out
}

func (l *loader) annotations(p *field.Path, a *Annotations) {
	if a == nil {
		return
	}
	switch a.InterruptBehavior {
	case "", "cancel", "block":
	default:
		l.errs.Add(field.Unsupported(p.Child("interrupt_behavior"), "interrupt_behavior must be cancel or block"))
	}
	for i, c := range a.Capabilities {
		if c == "" {
			l.errs.Add(field.Invalid(p.Child("capabilities").Index(i), "capability must not be empty"))
		}
	}
}

func (l *loader) prepareAction(root, doc map[string]any, p *field.Path, a *action) {
	registry := l.opts.runtimes
	kind, backend, value, ok := pick(l, p.Child("execute"), "backend", doc["execute"], registry.Kinds(), registry.Lookup)
	if !ok {
		return
	}
	a.kind, a.backend = kind, backend
	bp := p.Child("execute").Key(kind)
	block := &runtime.Block{
		Kind: kind, Tool: l.m.Name, Action: a.def.Name, Path: bp, Value: value,
		Shared: root[kind], SharedPath: field.NewPath(kind), Check: l.checkerFor(a.params, false), BaseDir: l.opts.baseDir,
		RefOrigins: l.opts.refOrigins, DocumentBytes: l.opts.limits.DocumentBytes,
	}
	prepared, err := backend.Prepare(l.ctx, block)
	l.errs = append(l.errs, blockErrors(bp, err)...)
	a.prepared = prepared
	a.contextReads = block.Check.(*checker).contextReads
}

// sharedBlocks validates each top-level runtime block: once by its backend when the backend can, and reports
// blocks for unregistered backends or that nothing uses.
func (l *loader) sharedBlocks(root map[string]any, actions []*action) {
	used := map[string]bool{}
	for _, a := range actions {
		used[a.kind] = true
	}
	for _, kind := range sharedBlocks(l.m) {
		p := field.NewPath(kind)
		backend, ok := l.opts.runtimes.Lookup(kind)
		if !ok {
			l.errs.Add(unknownKind(p, "backend", kind, l.opts.runtimes.Kinds()))
			continue
		}
		v, canValidate := backend.(runtime.SharedValidator)
		if !canValidate {
			if !used[kind] {
				l.warn(field.Invalid(p, "no action uses the top-level %s block", kind))
			}
			continue
		}
		block := &runtime.Block{Kind: kind, Tool: l.m.Name, Shared: root[kind], SharedPath: p,
			Check: l.checkerFor(l.rootProps(), false), BaseDir: l.opts.baseDir}
		l.errs = append(l.errs, blockErrors(p, v.ValidateShared(l.ctx, block))...)
	}
}

func (l *loader) rootProps() []schema.Property { return l.rootProperties }

// checkerFor returns a checker that sees props as the declared parameters.
func (l *loader) checkerFor(props []schema.Property, message bool) *checker {
	c := &checker{load: l, params: make(map[string]schema.Property, len(props)), filterParams: l.allParams, message: message}
	for _, p := range props {
		c.params[p.Name] = p
	}
	return c
}

// pick finds the single key of an execute or receive block at p and the plugin registered for it. It reports
// what is wrong and returns ok=false when the block names zero, several or an unregistered kind. An empty block
// value is returned as an empty object.
func pick[T any](l *loader, p *field.Path, what string, doc any, kinds []string, lookup func(string) (T, bool)) (string, T, any, bool) {
	var none T
	block, present := asMap(doc)
	kind, e := exactlyOne(p, what, block, present, kinds)
	if e != nil {
		l.errs.Add(e)
		return "", none, nil, false
	}
	plugin, ok := lookup(kind)
	if !ok {
		l.errs.Add(unknownKind(p.Key(kind), what, kind, kinds))
		return "", none, nil, false
	}
	value := block[kind]
	if value == nil {
		value = map[string]any{}
	}
	return kind, plugin, value, true
}
