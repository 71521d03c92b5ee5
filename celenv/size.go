package celenv

import (
	"errors"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/interpreter"
)

// ErrSizeLimit is the cause of an evaluation error when the expression built more than its size limit
// (Limits.Size), or yielded a result larger than it.
var ErrSizeLimit = errors.New("size limit exceeded")

// DefaultSize is the default size limit, in bytes (Limits.Size).
const DefaultSize = 16 << 20

// elementBytes is what one list element or map entry counts for: about what it takes in memory.
const elementBytes = 16

// sizeLimitExceeded cancels an evaluation that went over its size limit, the way cel-go cancels one that went
// over its cost limit.
const sizeLimitExceeded interpreter.CancellationCause = 1 << 16

// sizeKey is the name under which an evaluation's activation answers with itself, so the size accounting finds
// it from any frame; no CEL identifier can spell it.
const sizeKey = "\x00celenv.size"

// sizeDecorator wraps every call and every list or map literal: what they return is what an expression builds.
// cel-go's cost limit counts operations, not bytes, so `x + x` doubling a string escapes it.
func sizeDecorator(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
	switch i.(type) {
	case interpreter.InterpretableCall, interpreter.InterpretableConstructor:
		return &sized{InterpretableV2: i}, nil
	}
	return i, nil
}

// sized counts the size of the values an instruction builds against the evaluation's limit.
type sized struct {
	interpreter.InterpretableV2
}

func (s *sized) Eval(act interpreter.Activation) ref.Val {
	v := s.InterpretableV2.Eval(act)
	account(act, s.ID(), v)
	return v
}

func (s *sized) Exec(f *interpreter.ExecutionFrame) ref.Val {
	v := s.InterpretableV2.Exec(f)
	account(f, s.ID(), v)
	return v
}

func account(act interpreter.Activation, id int64, v ref.Val) {
	if a, ok := act.ResolveName(sizeKey); ok {
		if a, ok := a.(*activation); ok {
			a.built(id, v)
		}
	}
}

// built adds what v took to build to the evaluation's total and cancels the evaluation past the limit. A
// comprehension's accumulator grows in place: only its growth since node id last returned it counts.
func (a *activation) built(id int64, v ref.Val) {
	var n int64
	switch v := v.(type) {
	case types.String:
		n = int64(len(v))
	case types.Bytes:
		n = int64(len(v))
	case traits.Lister:
		size := int64(v.Size().(types.Int))
		n = size
		if _, ok := v.(traits.MutableLister); ok {
			if a.grown == nil {
				a.grown = map[int64]int64{}
			}
			if prev := a.grown[id]; size >= prev {
				n = size - prev
			}
			a.grown[id] = size
		}
		n *= elementBytes
	case traits.Mapper:
		n = int64(v.Size().(types.Int)) * 2 * elementBytes
	}
	if a.size += n; a.size > a.sizeLimit {
		panic(interpreter.EvalCancelledError{Cause: sizeLimitExceeded, Message: ErrSizeLimit.Error()})
	}
}
