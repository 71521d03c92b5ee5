package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"unicode/utf8"

	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/internal/funcname"
	"github.com/commonagents-go/tool/internal/schema"
	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/runtime"
)

// Skipped returns what the top-level blocks offered but Load could not turn into actions, in document order.
func (t *Tool) Skipped() []Skipped { return append([]Skipped(nil), t.skipped...) }

type expansionCount struct {
	kind                          string
	expanded, skipped, unselected int
}

// expand adds the actions of every top-level block whose backend implements runtime.Expander (SPEC §7.5, §7.6),
// after declared actions bound to one of its items got their parameters (bindDeclared). A block with problems of
// its own does not expand. Expanded actions get their parameters through the same schema rules as declared ones;
// one whose schema cannot be used, whose parameters conflict with the root's, or whose function name another
// expanded action already takes is skipped with the reason. A name taken by a declared action or event is a
// problem at the block's path.
func (l *loader) expand(root map[string]any, t *Tool) {
	l.bindDeclared(t)
	kinds := sharedBlocks(l.m)
	used := map[string]bool{}
	declared := map[string][]runtime.Action{}
	for _, a := range t.actions {
		used[a.kind] = true
		declared[a.kind] = append(declared[a.kind], a.prepared)
	}
	for _, kind := range kinds {
		backend, ok := l.opts.runtimes.Lookup(kind)
		ex, canExpand := backend.(runtime.Expander)
		if !ok || !canExpand || l.hasProblemsAt(kind) {
			continue
		}
		p := field.NewPath(kind)
		block := &runtime.Block{Kind: kind, Tool: l.m.Name, Shared: root[kind], SharedPath: p,
			Check: l.checkerFor(l.rootProps(), false), BaseDir: l.opts.baseDir, Discover: l.opts.discover,
			Used: used[kind], Declared: declared[kind], Values: loadValues{t}, RefOrigins: l.opts.refOrigins,
			DocumentBytes: l.opts.limits.DocumentBytes}
		exp, err := ex.Expand(l.ctx, block)
		if err != nil {
			l.errs = append(l.errs, blockErrors(p, err)...)
			continue
		}
		if exp == nil {
			continue
		}
		l.addExpanded(t, kind, backend, exp)
	}
	l.annotate(root, t, declared)
	for _, a := range t.actions {
		// A declared action's source may have given it a title while its block expanded (an MCP tool's).
		if tt, ok := a.prepared.(runtime.Titler); ok && a.title == "" && a.def != nil {
			a.title = tt.Title()
		}
	}
}

// annotate lets each backend that declared actions run on learn what their sources say of them
// (runtime.Annotator), with or without a top-level block of its kind; a manifest with problems starts nothing.
func (l *loader) annotate(root map[string]any, t *Tool, declared map[string][]runtime.Action) {
	if len(l.errs) > 0 {
		return
	}
	for _, kind := range slices.Sorted(maps.Keys(declared)) {
		backend, _ := l.opts.runtimes.Lookup(kind)
		an, ok := backend.(runtime.Annotator)
		if !ok {
			continue
		}
		block := &runtime.Block{Kind: kind, Tool: l.m.Name, Shared: root[kind], SharedPath: field.NewPath(kind),
			Check: l.checkerFor(l.rootProps(), false), BaseDir: l.opts.baseDir, Discover: l.opts.discover,
			Used: true, Declared: declared[kind], Values: loadValues{t}, RefOrigins: l.opts.refOrigins,
			DocumentBytes: l.opts.limits.DocumentBytes}
		l.warns = append(l.warns, an.Annotate(l.ctx, block)...)
	}
}

// hasProblemsAt reports whether a problem was found in the top-level block kind.
func (l *loader) hasProblemsAt(kind string) bool {
	for _, e := range l.errs {
		if e.Path == kind || len(e.Path) > len(kind) && e.Path[:len(kind)] == kind && (e.Path[len(kind)] == '.' || e.Path[len(kind)] == '[') {
			return true
		}
	}
	return false
}

func (l *loader) addExpanded(t *Tool, kind string, backend runtime.Runtime, exp *runtime.Expansion) {
	p := field.NewPath(kind)
	taken := map[string]string{} // function-name suffix → action or event name
	for _, a := range l.m.Actions {
		taken[funcname.Clean(a.Name)] = a.Name
	}
	declared := map[string]bool{}
	for _, a := range l.m.Actions {
		declared[a.Name] = true
	}
	for _, e := range l.m.Events {
		declared[e.Name] = true
	}
	skip := func(name, reason string) {
		t.skipped = append(t.skipped, Skipped{Kind: kind, Name: name, Reason: reason})
	}
	for _, s := range exp.Skipped {
		skip(s.Name, s.Reason)
	}
	l.warns = append(l.warns, exp.Warnings...)
	count := expansionCount{kind: kind, unselected: exp.Unselected}
	actionsBefore, skippedBefore := len(t.actions), len(t.skipped)-len(exp.Skipped)
	defer func() {
		count.expanded, count.skipped = len(t.actions)-actionsBefore, len(t.skipped)-skippedBefore
		t.expansions = append(t.expansions, count)
	}()
	against := validators(exp.Actions)
	for i, e := range exp.Actions {
		if declared[e.Name] {
			l.errs.Add(field.Duplicate(p, "%s expands into an action named %q, which is already the name of a declared action or event", kind, e.Name))
			continue
		}
		if first, dup := taken[funcname.Clean(e.Name)]; dup {
			if _, own := declared[first]; own {
				l.errs.Add(field.Duplicate(p, "%s expands into an action %q whose function name is that of the declared action %q", kind, e.Name, first))
			} else {
				skip(e.Name, fmt.Sprintf("its function name is that of the action %q", first))
			}
			continue
		}
		a, reason := l.expandedAction(kind, backend, e, against[i])
		if a == nil {
			skip(e.Name, reason)
			continue
		}
		taken[funcname.Clean(e.Name)] = e.Name
		t.actions = append(t.actions, a)
	}
}

// sourceParameters is implemented by prepared actions bound to an item of a document (an OpenAPI operation): they
// know the parameters the item takes, as a JSON Schema object.
type sourceParameters interface {
	Parameters() map[string]any
}

// sourceDialect is implemented by prepared actions whose Parameters are in a dialect other than draft-07: it
// returns the `$schema` URI ("" for draft-07).
type sourceDialect interface {
	SchemaDialect() string
}

// bindDeclared gives each declared action bound to a document item (operation_id) the item's parameters when it
// declares none, and otherwise checks that it declares every parameter the item requires.
func (l *loader) bindDeclared(t *Tool) {
	for i, a := range t.actions {
		src, ok := a.prepared.(sourceParameters)
		if !ok || src.Parameters() == nil {
			continue
		}
		p := field.NewPath("actions").Index(i)
		bp := p.Child("execute").Key(a.kind)
		if len(a.def.Parameters) == 0 {
			dialect := ""
			if d, ok := a.prepared.(sourceDialect); ok {
				dialect = d.SchemaDialect()
			}
			own, reason := compileSource(src.Parameters(), dialect, nil)
			if own == nil {
				l.errs.Add(field.Invalid(bp, "the parameters of the bound operation cannot be used: %s", reason))
				continue
			}
			a.own = own
			a.params = l.mergeParams(p.Child("parameters"), own.Properties())
			a.serverDefaults = l.serverDefaults(a.prepared, own)
			a.prepareLLM(l.rootParams)
			continue
		}
		required, _ := src.Parameters()["required"].([]any)
		for _, r := range required {
			name, _ := r.(string)
			if !hasParam(a.params, name) {
				l.errs.Add(field.Required(bp, "the bound operation requires the parameter %q: declare it in the action's parameters", name))
			}
		}
	}
}

func hasParam(params []schema.Property, name string) bool {
	for _, p := range params {
		if p.Name == name {
			return true
		}
	}
	return false
}

// compileSource compiles parameters a backend derived from its source, in dialect (a `$schema` URI; "" is
// draft-07) unless they name theirs, as a backend's schema (schema.Options.Foreign); it returns the reason when it
// cannot.
func compileSource(params map[string]any, dialect string, against *schema.Validator) (*schema.Schema, string) {
	// Compile a decoded copy, so the schema compiler sees JSON numbers as a manifest's schemas have them.
	doc, ok := decodedCopy(params)
	if !ok {
		raw, err := json.Marshal(params)
		if err != nil {
			return nil, "not encodable as JSON"
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			return nil, "not decodable"
		}
	}
	opts := schema.Options{Parameters: true, Foreign: true, Against: against}
	if dialect != "" {
		d, ok := schema.ParseDialect(dialect)
		if !ok {
			return nil, fmt.Sprintf("in the JSON Schema dialect %q, which is not supported", dialect)
		}
		opts.Dialect = d
	}
	own, errs := schema.Compile(doc, field.NewPath("parameters"), opts)
	if len(errs) > 0 {
		return nil, "not a usable JSON Schema: " + errs[0].Error()
	}
	return own, ""
}

// decodedCopy returns what encoding v as JSON and decoding it again gives (every number a float64), without the
// encoding: a backend's parameters are large and share their subschemas (an OpenAPI document's components). ok
// is false for what that round trip may change or refuse (invalid UTF-8, a NaN, types other than those of
// decoded JSON and Go's integers): the caller then makes it.
func decodedCopy(v any) (any, bool) {
	switch t := v.(type) {
	case nil, bool:
		return t, true
	case string:
		return t, utf8.ValidString(t)
	case float64:
		return t, !math.IsNaN(t) && !math.IsInf(t, 0)
	case int:
		return float64(t), true
	case int64:
		return float64(t), true
	case uint64:
		return float64(t), true
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			d, ok := decodedCopy(e)
			if !ok || !utf8.ValidString(k) {
				return nil, false
			}
			out[k] = d
		}
		return out, true
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			d, ok := decodedCopy(e)
			if !ok {
				return nil, false
			}
			out[i] = d
		}
		return out, true
	}
	return nil, false
}

// validators compiles each action's Validation against its document, the document compiled once per
// SchemaDocument (shared by every Load that gets the same one from its backend's document cache) and the actions
// of one document in one batch. out[i] is nil where actions[i] has none or it cannot be compiled: the action is
// then validated against its parameters as shown, unless its Validation is Required.
func validators(actions []runtime.Expanded) []*schema.Validator {
	out := make([]*schema.Validator, len(actions))
	byDoc := map[*runtime.SchemaDocument][]int{}
	var order []*runtime.SchemaDocument
	for i, e := range actions {
		if v := e.Validation; v != nil && v.Document != nil {
			if c, ok := v.Compiled().(*schema.Validator); ok && c != nil {
				out[i] = c // compiled by an earlier Load
				continue
			}
			if _, seen := byDoc[v.Document]; !seen {
				order = append(order, v.Document)
			}
			byDoc[v.Document] = append(byDoc[v.Document], i)
		}
	}
	for _, sd := range order {
		doc := compiledDocument(sd)
		if doc == nil {
			continue
		}
		idx := byDoc[sd]
		docs := make([]map[string]any, len(idx))
		for j, i := range idx {
			docs[j] = actions[i].Validation.Schema
		}
		vs, _ := doc.CompileAll(docs)
		for j, i := range idx {
			out[i] = vs[j]
			if vs[j] != nil {
				actions[i].Validation.SetCompiled(vs[j])
			}
		}
	}
	return out
}

// compiledDocument returns the compiled form of sd, made once; nil when sd cannot be compiled.
func compiledDocument(sd *runtime.SchemaDocument) *schema.Document {
	doc, _ := sd.Compiled(func() any {
		d := schema.Draft7
		if sd.Dialect != "" {
			var ok bool
			if d, ok = schema.ParseDialect(sd.Dialect); !ok {
				return (*schema.Document)(nil)
			}
		}
		compiled, err := schema.NewDocument(sd.Doc, d)
		if err != nil {
			return (*schema.Document)(nil)
		}
		return compiled
	}).(*schema.Document)
	return doc
}

// expandedAction turns e into an action as a declared one is built; it returns the reason when it cannot.
func (l *loader) expandedAction(kind string, backend runtime.Runtime, e runtime.Expanded, against *schema.Validator) (*action, string) {
	if against == nil && e.Validation != nil && e.Validation.Required {
		return nil, "its schema cannot be compiled against its document"
	}
	own, reason := compileSource(e.Parameters, e.Dialect, against)
	if own == nil {
		return nil, "its parameters are " + reason
	}
	l.warnDroppedDefaults(kind, e, own)
	var whole *schema.Schema
	if e.Schema != nil && against == nil {
		if whole, reason = compileSource(e.Schema, e.Dialect, nil); whole == nil {
			return nil, "its schema is " + reason
		}
	}
	for _, prop := range own.Properties() {
		for _, r := range l.rootProperties {
			if r.Name == prop.Name && !reflect.DeepEqual(r.Schema, prop.Schema) {
				return nil, fmt.Sprintf("its parameter %q is also a root parameter with a different definition", prop.Name)
			}
		}
	}
	// def.Parameters stays empty: the parameters are the source's (own), and the LLM's copy is encoded once
	// (prepareLLM).
	def := &Action{Name: e.Name, Description: e.Description,
		Execute: map[string]json.RawMessage{kind: json.RawMessage("null")}, Annotations: annotationsOf(e.Annotations)}
	a := &action{def: def, kind: kind, backend: backend, prepared: e.Action, own: own, whole: whole, title: e.Title}
	if len(l.rootProperties) == 0 {
		a.definition = e.Definition // root parameters would be missing from it
	}
	if e.OutputSchema != nil {
		a.outputSchema, _ = json.Marshal(e.OutputSchema)
	}
	a.params = l.mergeParams(field.NewPath(kind), own.Properties())
	a.serverDefaults = l.serverDefaults(e.Action, own)
	a.prepareLLM(l.rootParams)
	return a, ""
}

// serverDefaults returns the parameters of own whose defaults the server applies, when the prepared action says
// its source's defaults are the server's (runtime.ServerDefaults); a parameter the root also declares is the
// manifest's, and keeps its default filled in (SPEC §3.1).
func (l *loader) serverDefaults(prepared runtime.Action, own *schema.Schema) map[string]bool {
	sd, ok := prepared.(runtime.ServerDefaults)
	if !ok || !sd.DefaultsOnServer() {
		return nil
	}
	var out map[string]bool
	for _, p := range own.Properties() {
		if !p.HasDefault || hasParam(l.rootProperties, p.Name) {
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[p.Name] = true
	}
	return out
}

// annotationsOf turns a source's catalog hints into manifest annotations; nil stays nil.
func annotationsOf(tr *runtime.Traits) *Annotations {
	if tr == nil {
		return nil
	}
	b := func(v bool) *bool { return &v }
	return &Annotations{ReadOnly: b(tr.ReadOnly), Destructive: b(tr.Destructive), Idempotent: b(tr.Idempotent),
		ConcurrencySafe: b(tr.ConcurrencySafe), OpenWorld: b(tr.OpenWorld), Capabilities: tr.Capabilities}
}

// reportSkipped tells the observer about every skipped item and every expanded block, once, at load.
func (t *Tool) reportSkipped(ctx context.Context) {
	obs := t.opts.observer
	if obs == nil {
		return
	}
	for _, s := range t.skipped {
		obs.Observe(ctx, Fact{Name: facts.ActionSkipped, Tool: t.Name(), Time: t.opts.clock.Now(),
			Data: map[string]any{"kind": s.Kind, "name": s.Name, "reason": s.Reason}})
	}
	for _, e := range t.expansions {
		obs.Observe(ctx, Fact{Name: facts.ActionsExpanded, Tool: t.Name(), Time: t.opts.clock.Now(),
			Data: map[string]any{"kind": e.kind, "expanded": e.expanded, "skipped": e.skipped, "unselected": e.unselected}})
	}
}

// loadValues resolves the roots available at load (runtime.Block.Values): settings and runtime.
type loadValues struct{ t *Tool }

func (v loadValues) Resolve(ref interp.Ref) (any, error) {
	switch ref.Root {
	case interp.RootSettings:
		return v.t.setting(ref)
	case interp.RootRuntime:
		info := v.t.opts.info
		return lookup(map[string]any{"version": info.Version, "api_root": info.APIRoot,
			"dashboard_url": info.DashboardURL}, ref.Steps), nil
	}
	return nil, fmt.Errorf("{%s}: %s values are not available at load", ref.Text, ref.Root)
}

// warnDroppedDefaults warns about each parameter default of an expanded action that fails its own schema: it is
// dropped (the source's server applies its own defaults), not a reason to skip the action.
func (l *loader) warnDroppedDefaults(kind string, e runtime.Expanded, own *schema.Schema) {
	props, _ := e.Parameters["properties"].(map[string]any)
	for _, p := range own.Properties() {
		ps, _ := props[p.Name].(map[string]any)
		if _, had := ps["default"]; had && !p.HasDefault {
			l.warn(field.Invalid(field.NewPath(kind), "action %q: the default of parameter %q does not validate "+
				"against its schema; it is dropped", e.Name, p.Name))
		}
	}
}
