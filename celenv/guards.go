package celenv

import (
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
)

// A guard is one of the leading conjuncts of a program's top-level `&&` chain that compare a field with a string
// literal: `event.payload.action == 'created'`, `'push' == event.headers['x-github-event']`. Filters usually open
// with one, to say which kind of payload they take; when it fails, the program is false whatever else it says,
// and FalseFor can tell without evaluating anything.
type guard struct {
	path []string // the variable, then the field names: constant, none of them `parameters`
	text string
}

// guards returns the guards of e in source order: the conjuncts of its top-level `&&` chain up to the first
// that is not a guard. Only leading ones count: CEL evaluates a chain from the left and stops at the first
// false, so a guard that fails decides the result before any other conjunct can fail for real (a missing field
// in an earlier guard is an error that the false absorbs).
func guards(e ast.Expr) []guard {
	var terms []ast.Expr
	var split func(e ast.Expr)
	split = func(e ast.Expr) {
		if e.Kind() == ast.CallKind && e.AsCall().FunctionName() == operators.LogicalAnd {
			for _, arg := range e.AsCall().Args() {
				split(arg)
			}
			return
		}
		terms = append(terms, e)
	}
	split(e)
	var out []guard
	for _, term := range terms {
		g, ok := guardOf(term)
		if !ok {
			break
		}
		out = append(out, g)
	}
	return out
}

// guardOf reads term as `path == 'text'` or `'text' == path`.
func guardOf(term ast.Expr) (guard, bool) {
	if term.Kind() != ast.CallKind || term.AsCall().FunctionName() != operators.Equals {
		return guard{}, false
	}
	args := term.AsCall().Args()
	for i, side := range args {
		if side.Kind() != ast.LiteralKind {
			continue
		}
		text, ok := side.AsLiteral().(types.String)
		if !ok {
			return guard{}, false
		}
		path, ok := fieldPath(args[1-i])
		if !ok || path[0] == paramsVar {
			return guard{}, false
		}
		return guard{path: path, text: string(text)}, true
	}
	return guard{}, false
}

// fieldPath reads e as a variable followed by fields of constant names (`a.b`, `a['b']`); not `has(a.b)`, and
// not optional selections.
func fieldPath(e ast.Expr) ([]string, bool) {
	switch e.Kind() {
	case ast.IdentKind:
		return []string{e.AsIdent()}, true
	case ast.SelectKind:
		sel := e.AsSelect()
		if sel.IsTestOnly() {
			return nil, false
		}
		p, ok := fieldPath(sel.Operand())
		return append(p, sel.FieldName()), ok
	case ast.CallKind:
		call := e.AsCall()
		args := call.Args()
		if call.FunctionName() != operators.Index || len(args) != 2 || args[1].Kind() != ast.LiteralKind {
			return nil, false
		}
		key, ok := args[1].AsLiteral().(types.String)
		if !ok {
			return nil, false
		}
		p, ok := fieldPath(args[0])
		return append(p, string(key)), ok
	}
	return nil, false
}

// FalseFor reports that the program yields false for vars, from a look that evaluates nothing: one of the leading
// conjuncts of its top-level `&&` chain compares a field with a string literal (`event.payload.action ==
// 'created'`), and vars hold another string there, in maps of type map[string]any. false says only that the look
// cannot tell: it also says so when evaluating the conjuncts up to that one could exceed the program's cost limit.
// A filter that opens with such a test is refused this way at the cost of a few map lookups.
func (p *Program) FalseFor(vars map[string]any) bool {
	var spent uint64
	for _, g := range p.guards {
		s, ok := lookupString(vars, g.path)
		// Evaluating the guards this far could cost more than the program may spend: evaluation would stop on the
		// cost limit, an error, before it saw the false.
		if spent += g.cost(s); spent > p.lim.Cost {
			return false
		}
		if ok && s != g.text {
			return true
		}
	}
	return false
}

// cost bounds from above what CEL charges to evaluate g against the string s: a step for the variable and each
// field, and the comparison's traversal of both strings (cel-go charges a tenth of a unit per byte).
func (g guard) cost(s string) uint64 {
	return uint64(len(g.path)) + 2 + uint64(len(s)+len(g.text))/10
}

// lookupString returns the string at path in vars.
func lookupString(vars map[string]any, path []string) (string, bool) {
	var v any = vars
	for _, name := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return "", false
		}
		if v, ok = m[name]; !ok {
			return "", false
		}
	}
	s, ok := v.(string)
	return s, ok
}
