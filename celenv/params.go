package celenv

import (
	"slices"

	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/parser"
)

const paramsVar = "parameters"

// Conjunct is one top-level conjunct `Value == parameters.Param` (either side) of an expression. A caller holding
// a set of allowed values for Param can evaluate Value once and look its result up in the set instead of trying
// every value (SPEC §6).
type Conjunct struct {
	// Param is X in `... == parameters.X`.
	Param string
	// Value is the other side, compiled in the same scope; it does not reference `parameters`.
	Value *Program
}

// EqualityConjuncts returns the conjuncts of the top-level `&&` chain that have the form `A == parameters.X` or
// `parameters.X == A` where A does not reference `parameters`, in source order (a name may appear more than
// once). They are necessary conditions only: after choosing X by membership the whole expression must still be
// evaluated, and when evaluating a Value fails the caller must fall back to trying the values (CEL's `&&`
// absorbs errors when another conjunct is false). The result is a fresh slice.
func (p *Program) EqualityConjuncts() []Conjunct {
	p.conjOnce.Do(func() {
		if len(p.params) > 0 {
			p.conjuncts = equalityConjuncts(p.scope, p.ast.NativeRep(), p.lim)
		}
	})
	return slices.Clone(p.conjuncts)
}

// parameterRefs returns the sorted distinct constant keys under which e reads `parameters`, and whether e also
// uses `parameters` in some other way.
func parameterRefs(e ast.Expr) (refs []string, dynamic bool) {
	var idents, keyed int
	ast.PreOrderVisit(e, ast.NewExprVisitor(func(e ast.Expr) {
		if isParams(e) {
			idents++
			return
		}
		if key, ok := paramKey(e, true); ok {
			keyed++
			if !slices.Contains(refs, key) {
				refs = append(refs, key)
			}
		}
	}))
	slices.Sort(refs)
	return refs, idents > keyed
}

// paramKey returns X when e is `parameters.X`, `parameters['X']`, `parameters.?X` or `parameters[?'X']`,
// and, when presence is true, `has(parameters.X)`.
func paramKey(e ast.Expr, presence bool) (string, bool) {
	switch e.Kind() {
	case ast.SelectKind:
		sel := e.AsSelect()
		if isParams(sel.Operand()) && (presence || !sel.IsTestOnly()) {
			return sel.FieldName(), true
		}
	case ast.CallKind:
		call := e.AsCall()
		switch call.FunctionName() {
		case operators.Index, operators.OptIndex, operators.OptSelect:
		default:
			return "", false
		}
		args := call.Args()
		if len(args) == 2 && isParams(args[0]) && args[1].Kind() == ast.LiteralKind {
			if key, ok := args[1].AsLiteral().(types.String); ok {
				return string(key), true
			}
		}
	}
	return "", false
}

func isParams(e ast.Expr) bool { return e.Kind() == ast.IdentKind && e.AsIdent() == paramsVar }

func mentionsParams(e ast.Expr) bool {
	found := false
	ast.PreOrderVisit(e, ast.NewExprVisitor(func(e ast.Expr) { found = found || isParams(e) }))
	return found
}

// equalityConjuncts splits the top-level `&&` chain of a and compiles the value side of each equality with a
// parameter. A side that cannot be unparsed or recompiled is skipped: conjuncts are an optimisation.
func equalityConjuncts(s Scope, a *ast.AST, lim Limits) []Conjunct {
	var out []Conjunct
	var split func(e ast.Expr)
	split = func(e ast.Expr) {
		if e.Kind() != ast.CallKind {
			return
		}
		call := e.AsCall()
		args := call.Args()
		switch call.FunctionName() {
		case operators.LogicalAnd:
			for _, arg := range args {
				split(arg)
			}
		case operators.Equals:
			for i, side := range args {
				key, ok := paramKey(args[1-i], false)
				if !ok || mentionsParams(side) {
					continue
				}
				src, err := parser.Unparse(side, a.SourceInfo())
				if err != nil {
					return
				}
				if v, err := compile(s, src, lim); err == nil {
					out = append(out, Conjunct{Param: key, Value: v})
				}
				return
			}
		}
	}
	split(a.Expr())
	return out
}
