package openapi

import (
	"context"
	"regexp"

	"github.com/commonagents-go/tool/runtime"
	"github.com/getkin/kin-openapi/openapi3"
)

// actionName is the manifest's action-name rule (SPEC §1): an operationId that breaks it cannot be an action name.
var actionName = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_-]{0,63}$`)

// Expand reads the document of the top-level block (bounded by ctx) and returns one action per operation with an
// operationId, in path order. When a declared action runs on openapi (b.Used), the declared actions are the whole
// surface and the block expands into nothing, as a top-level mcp block does (SPEC §7.6): the block then only gives
// them its document, base URL, headers and timeout. Operations that cannot become actions are listed in Skipped
// with the reason: no operationId, an operationId that is not a valid action name or is given twice, a body that is
// not JSON or is on a GET, HEAD or TRACE operation, a path with a "." or ".." segment, a parameter described by
// content or in a serialization style Invoke does not implement, a cookie name that is not a token, schemas too
// large once inlined. A document that cannot be read, or whose servers give no usable base URL while base_url is
// unset, is an error at the block's path.
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
	doc, err := document(ctx, b.SharedPath.Child("url"), shared.URL, b.BaseDir)
	if err != nil {
		return nil, err
	}
	out := &runtime.Expansion{}
	seen := map[string]bool{}
	var baseErr error
	walk(doc, func(path, method string, item *openapi3.PathItem, op *openapi3.Operation) {
		if baseErr != nil {
			return
		}
		id := op.OperationID
		skip := func(reason string) {
			name := id
			if name == "" {
				name = method + " " + path
			}
			out.Skipped = append(out.Skipped, runtime.Skipped{Name: name, Reason: reason})
		}
		switch {
		case id == "":
			skip("the operation has no operationId")
			return
		case !actionName.MatchString(id):
			skip("the operationId is not a valid action name (" + actionName.String() + ")")
			return
		case seen[id]:
			skip("the operationId is given to another operation too")
			return
		}
		seen[id] = true
		o, err := convert(path, method, item, op)
		if err != nil {
			skip(err.Error())
			return
		}
		base, err := parts.base(b.Check, doc, shared.URL, item, op)
		if err != nil {
			baseErr = err
			return
		}
		a := &Action{DocumentURL: shared.URL, OperationID: id}
		fill(a, o, parts, base)
		out.Actions = append(out.Actions, runtime.Expanded{
			Name: id, Description: o.description, Parameters: o.schema, Action: a,
		})
	})
	if baseErr != nil {
		return nil, baseErr
	}
	return out, nil
}
