package celenv

import (
	"errors"
	"fmt"
	"strings"
)

// ErrCostLimit is the cause of an evaluation error when the expression exceeded its cost limit.
var ErrCostLimit = errors.New("cost limit exceeded")

// ErrMissingField matches (with errors.Is) an evaluation error caused only by a missing map key or attribute:
// "no such key" and "no such attribute" from a selection such as event.payload.action, also under has(), ! or !=.
// A payload that lacks a field is not a broken filter: the delivery discards as filter_false, not filter_error.
var ErrMissingField = errors.New("no such field")

// ErrNotJSON is the cause of an evaluation error when the result cannot be represented as JSON.
var ErrNotJSON = errors.New("result is not representable as JSON")

// CompileError reports an expression that does not parse, does not type-check in its scope, or is too long.
type CompileError struct {
	// Issues is cel-go's report: one "ERROR: <input>:line:column: message" entry per problem, each followed by
	// the expression line and a caret under the column.
	Issues string
}

// Error returns the issues prefixed with what failed.
func (e *CompileError) Error() string { return "invalid cel expression: " + e.Issues }

// EvalError reports a failed evaluation. Its message never contains values taken from the variables.
type EvalError struct {
	// Line and Column (both 1-based) locate the failing sub-expression; 0 when unknown.
	Line, Column int
	// Message describes the failure, e.g. "no such key: pull_request".
	Message string
	err     error
	missing bool // the cause is a missing key or attribute (ErrMissingField)
}

// Error returns "evaluate cel expression at line:column: message".
func (e *EvalError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("evaluate cel expression at %d:%d: %s", e.Line, e.Column, e.Message)
	}
	return "evaluate cel expression: " + e.Message
}

// Unwrap returns the cause. Unlike Error, the cause's message may contain values.
func (e *EvalError) Unwrap() error { return e.err }

// Is reports ErrMissingField for an evaluation that failed on a missing key or attribute.
func (e *EvalError) Is(target error) bool { return target == ErrMissingField && e.missing }

// missingField reports cel-go's error for a missing map key or attribute. cel-go exposes no type or sentinel for
// it (its resolution error is unexported and compares by message), so its two fixed message prefixes are the only
// handle; TestEvalErrorMissingField pins them against the cel-go in go.mod.
func missingField(msg string) bool {
	return strings.HasPrefix(msg, "no such key: ") || strings.HasPrefix(msg, "no such attribute(s): ")
}

// beyondFloat64 reports cel-go's error for a json.Number it cannot convert: in decoded JSON, only a number beyond
// float64's range (1e400), which the payload keeps as its text. cel-go gives the error no type of its own;
// TestEvalErrorBeyondFloat64 pins its message against the cel-go in go.mod.
func beyondFloat64(msg string) bool {
	return strings.HasPrefix(msg, "unsupported conversion to ref.Val: (json.Number)")
}

// valueMarkers end the fixed part of cel-go messages that print a value without quoting it.
var valueMarkers = []string{
	"no such key: ",
	"insert failed: key ",
	"unsupported index value ",
	"from non-optional value ",
	"unsupported conversion to ref.Val: ",
	"timestamp overflow: ",
	"out of range [-23, 23]: ",
	"out of range [0, 59]: ",
}

// typeNames are quoted in cel-go's conversion errors and tell nothing about a value.
var typeNames = map[string]bool{
	"bool": true, "bytes": true, "double": true, "duration": true, "int": true, "list": true, "map": true,
	"null_type": true, "string": true, "timestamp": true, "type": true, "uint": true, "optional_type": true,
	"Duration": true, "Timestamp": true, "google.protobuf.Duration": true, "google.protobuf.Timestamp": true,
}

// redact removes from a cel-go error message any text that may come from a variable: a value printed after one
// of valueMarkers and every quoted span, unless the text is a type name or also appears in the expression src (then
// it is no secret of the variables).
func redact(msg, src string) string {
	for _, m := range valueMarkers {
		if i := strings.Index(msg, m); i >= 0 {
			rest := msg[i+len(m):]
			if rest == "" || !strings.Contains(src, rest) {
				msg = msg[:i+len(m)] + "…"
			}
			break
		}
	}
	var b strings.Builder
	for {
		i := strings.IndexAny(msg, `"'`)
		if i < 0 {
			b.WriteString(msg)
			return b.String()
		}
		q := msg[i]
		j := strings.IndexByte(msg[i+1:], q)
		if j < 0 { // unbalanced: the rest may be a value
			b.WriteString(msg[:i+1])
			b.WriteString("…")
			return b.String()
		}
		quoted := msg[i+1 : i+1+j]
		b.WriteString(msg[:i+1])
		if quoted != "" && !typeNames[quoted] && !strings.Contains(src, quoted) {
			quoted = "…"
		}
		b.WriteString(quoted)
		b.WriteByte(q)
		msg = msg[i+2+j:]
	}
}
