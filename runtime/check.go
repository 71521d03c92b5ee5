package runtime

import (
	"github.com/commonagents-go/tool/celenv"
	"github.com/commonagents-go/tool/field"
	"github.com/commonagents-go/tool/interp"
)

// Checker parses templates and compiles CEL for a block, checking every reference against the manifest's
// declarations (SPEC §4.2): unknown or misplaced roots, undeclared parameters and settings, parameter tokens in a
// URL authority. The loader supplies it; a backend's Prepare uses it for every field it interpolates.
type Checker interface {
	// Template parses src and checks that its references use only roots.
	Template(p *field.Path, src string, roots ...string) (*interp.Template, field.List)
	// Value parses a JSON value whose string leaves are templates (a request body).
	Value(p *field.Path, v any, roots ...string) (*interp.Value, field.List)
	// Map parses a map of templates (headers); the result has the same keys.
	Map(p *field.Path, m map[string]string, roots ...string) (map[string]*interp.Template, field.List)
	// URL parses a URL template per SPEC §4.4. When base is not "", a relative src is joined to it.
	URL(p *field.Path, src, base string, roots ...string) (*interp.URL, field.List)
	// CEL compiles and type-checks expr in scope.
	CEL(p *field.Path, expr string, scope celenv.Scope) (*celenv.Program, field.List)
	// Warn records a non-fatal finding, such as a legacy alias (Tool.Warnings).
	Warn(w *field.Error)
}

// The interpolation roots each kind of field may use (SPEC §4.2).
var (
	// ExecuteRoots are the roots of action execute string fields.
	ExecuteRoots = []string{interp.RootParameters, interp.RootSettings, interp.RootRuntime, interp.RootAgent,
		interp.RootMount, interp.RootAuth, interp.RootContext}
	// SessionRoots are ExecuteRoots plus session, for stateful_session execute and destroy.
	SessionRoots = append(append([]string(nil), ExecuteRoots...), interp.RootSession)
)
