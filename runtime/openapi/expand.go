package openapi

import (
	"context"
	"fmt"
	"strings"

	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/runtime"
	"github.com/getkin/kin-openapi/openapi3"
)

// Expand reads the document of the top-level block (bounded by ctx) and returns one action per selected operation,
// in path order. When a declared action runs on openapi (b.Used), the declared actions are the whole surface and
// the block expands into nothing, as a top-level mcp block does (SPEC §7.6): the block then only gives them its
// document, base URL, headers and timeout.
//
// Every operation gets an action name (nameAll): operationIds such as "repos/get" become "repos_get", operations
// without one are named from their method and path, and names that come out alike are kept apart by a hash of the
// operationId, each such rename reported as a warning. The block's select chooses the operations (Selection); the
// others are counted in Expansion.Unselected. Selected operations that cannot become actions are listed in Skipped with
// the reason: a request body in no media type Invoke can send, or on a HEAD or TRACE operation; a path with a "." or
// ".." segment or a space (a "?k=v" query and a "#..." fragment are used: route); a parameter described by content not
// in JSON or in a serialization style Invoke does not implement; a cookie name that is not a token; schemas too large
// once inlined. A document that cannot be read, or whose servers give no usable base URL while base_url is unset, is an
// error at the block's path.
func (Backend) Expand(ctx context.Context, b *runtime.Block) (*runtime.Expansion, error) {
	var shared Shared
	if errs := b.DecodeShared(&shared); len(errs) > 0 {
		return nil, errs.Err()
	}
	parts, errs := compileShared(b.Check, b.SharedPath, &shared)
	if len(errs) > 0 {
		return nil, errs.Err()
	}
	if b.Used {
		return &runtime.Expansion{}, nil
	}
	doc, src, err := document(ctx, b.SharedPath.Child("url"), shared.URL, b.BaseDir, originsOf(b), sizeOf(b))
	if err != nil {
		return nil, err
	}
	dialect := schemaDialect(doc)
	raw := src.document(dialect)
	out := &runtime.Expansion{}
	entries := selected(doc, shared.Select, out)
	warnings, clash := nameAll(entries)
	for _, w := range warnings {
		out.Warnings.Add(field.Invalid(b.SharedPath, "%s", w))
	}
	cache := newShownCache(dialect)
	clashed := map[*entry]bool{}
	for _, e := range clash {
		clashed[e] = true
	}
	out.Warnings = append(out.Warnings, unmatched(b.SharedPath.Child("select"), shared.Select, entries)...)
	for _, e := range entries {
		if clashed[e] {
			out.Skipped = append(out.Skipped, runtime.Skipped{Name: e.label(),
				Reason: fmt.Sprintf("its name %q, made apart from a like name by a hash, is still another operation's: change its operationId", e.name)})
			continue
		}
		o, err := convertShown(e.path, e.method, e.item, e.op, dialect, raw == nil, cache)
		if err == nil {
			err = offerFiles(o, parts.files)
		}
		var v *runtime.Validation
		if err == nil {
			if v = src.validation(e.op, o, src.strict); v == nil && o.shownDepth > 0 && o.whole == nil {
				if o, err = convertShown(e.path, e.method, e.item, e.op, dialect, true, cache); err == nil {
					err = offerFiles(o, parts.files)
				}
			}
		}
		if err != nil {
			out.Skipped = append(out.Skipped, runtime.Skipped{Name: e.label(), Reason: err.Error()})
			continue
		}
		base, err := parts.base(b.Check, doc, shared.URL, e.item, e.op)
		if err != nil {
			return nil, err
		}
		if v == nil && src.strict && len(o.located) > 0 {
			out.Skipped = append(out.Skipped, runtime.Skipped{Name: e.label(),
				Reason: "its schemas use references kin-openapi cannot read, and the document as written cannot be read either"})
			continue
		}
		a := &Action{DocumentURL: shared.URL, OperationID: e.op.OperationID}
		fill(a, o, parts, base)
		if o.shownDepth > 0 {
			out.Warnings.Add(field.Invalid(b.SharedPath, "operation %q: its parameters are shown to the LLM %d levels "+
				"deep (the full schema is over the bound); arguments are validated against the full schema",
				e.label(), o.shownDepth))
		}
		out.Actions = append(out.Actions, runtime.Expanded{
			Name: e.name, Description: o.description, Parameters: o.schema, Schema: o.whole, Dialect: o.dialect, Action: a,
			Validation: v,
		})
	}
	return out, nil
}

// selected returns the operations sel chooses, in path order, and counts the others in out.Unselected. The action
// name a pattern may match is the operation's base name: ties are broken after selection.
func selected(doc *openapi3.T, sel *Selection, out *runtime.Expansion) []*entry {
	var entries []*entry
	walk(doc, func(path, method string, item *openapi3.PathItem, op *openapi3.Operation) {
		if !sel.selects(path, method, baseName(path, method, op.OperationID), op) {
			out.Unselected++
			return
		}
		entries = append(entries, &entry{path: path, method: method, item: item, op: op})
	})
	return entries
}

// unmatched warns about selection entries that chose no operation: most likely a typo.
func unmatched(p *field.Path, sel *Selection, entries []*entry) field.List {
	if sel == nil {
		return nil
	}
	var out field.List
	check := func(child string, list []string, hit func(e *entry, v string) bool) {
		for i, v := range list {
			found := false
			for _, e := range entries {
				if found = hit(e, v); found {
					break
				}
			}
			if !found {
				out.Add(field.Invalid(p.Child(child).Index(i), "%q selects no operation of the document", v))
			}
		}
	}
	check("tags", sel.Tags, func(e *entry, v string) bool {
		for _, t := range e.op.Tags {
			if t == v {
				return true
			}
		}
		return false
	})
	check("operations", sel.Operations, func(e *entry, v string) bool {
		return e.op.OperationID != "" && glob(v, e.op.OperationID) || glob(v, baseName(e.path, e.method, e.op.OperationID))
	})
	check("paths", sel.Paths, func(e *entry, v string) bool { return underPrefix(e.path, v) })
	check("methods", sel.Methods, func(e *entry, v string) bool { return strings.EqualFold(e.method, v) })
	return out
}
