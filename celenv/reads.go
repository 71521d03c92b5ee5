package celenv

import (
	"slices"

	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
)

// RequiredKeys returns the sorted distinct keys K that every evaluation of the expression reads as `root.K` or
// `root['K']`, for root and each of its aliases (`context` and `c`, say): reads inside a branch of `?:`, `&&` or
// `||`, or inside a comprehension's step, may not happen and are left out, and so are presence tests
// (`has(root.K)`) and optional access (`root.?K`), which are meant for keys that may be missing. A host that gives
// the variable without one of these keys makes the expression fail. An expression that names a comprehension
// variable after one of the names returns nil: it cannot be told apart from the variable.
func (p *Program) RequiredKeys(root ...string) []string {
	e := p.ast.NativeRep().Expr()
	shadowed := false
	ast.PreOrderVisit(e, ast.NewExprVisitor(func(e ast.Expr) {
		if e.Kind() == ast.ComprehensionKind {
			c := e.AsComprehension()
			shadowed = shadowed || slices.Contains(root, c.IterVar()) || slices.Contains(root, c.IterVar2()) ||
				slices.Contains(root, c.AccuVar())
		}
	}))
	if shadowed {
		return nil
	}
	var keys []string
	var walk func(e ast.Expr, sure bool)
	walk = func(e ast.Expr, sure bool) {
		switch e.Kind() {
		case ast.SelectKind:
			sel := e.AsSelect()
			op := sel.Operand()
			if op.Kind() == ast.IdentKind && slices.Contains(root, op.AsIdent()) {
				if sure && !sel.IsTestOnly() && !slices.Contains(keys, sel.FieldName()) {
					keys = append(keys, sel.FieldName())
				}
				return
			}
			walk(op, sure && !sel.IsTestOnly())
		case ast.CallKind:
			call := e.AsCall()
			args := call.Args()
			switch call.FunctionName() {
			case operators.Conditional:
				walk(args[0], sure)
				walk(args[1], false)
				walk(args[2], false)
				return
			case operators.LogicalAnd, operators.LogicalOr:
				for _, a := range args {
					walk(a, false)
				}
				return
			case operators.OptSelect, operators.OptIndex:
				for _, a := range args {
					walk(a, false)
				}
				return
			case operators.Index:
				if len(args) == 2 && args[0].Kind() == ast.IdentKind && slices.Contains(root, args[0].AsIdent()) &&
					args[1].Kind() == ast.LiteralKind {
					if key, ok := args[1].AsLiteral().(types.String); ok {
						if sure && !slices.Contains(keys, string(key)) {
							keys = append(keys, string(key))
						}
						return
					}
				}
			}
			if call.IsMemberFunction() {
				walk(call.Target(), sure)
			}
			for _, a := range args {
				walk(a, sure)
			}
		case ast.ListKind:
			for _, el := range e.AsList().Elements() {
				walk(el, sure)
			}
		case ast.MapKind:
			for _, en := range e.AsMap().Entries() {
				me := en.AsMapEntry()
				walk(me.Key(), sure && !me.IsOptional())
				walk(me.Value(), sure && !me.IsOptional())
			}
		case ast.StructKind:
			for _, f := range e.AsStruct().Fields() {
				sf := f.AsStructField()
				walk(sf.Value(), sure && !sf.IsOptional())
			}
		case ast.ComprehensionKind:
			c := e.AsComprehension()
			walk(c.IterRange(), sure)
			walk(c.AccuInit(), sure)
			walk(c.LoopCondition(), false)
			walk(c.LoopStep(), false)
			walk(c.Result(), false)
		}
	}
	walk(e, true)
	slices.Sort(keys)
	return keys
}
