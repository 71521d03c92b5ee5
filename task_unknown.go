package tool

import (
	"context"
	"fmt"
	"strings"

	"github.com/commonagents-go/tool/runtime"
)

// noAction stands for the action of a call that names none: its Result has an empty Action.
var noAction = &action{def: &Action{}}

// unknownFunction reports a call to a function the task does not offer as a recoverable result.
func (t *Task) unknownFunction(ctx context.Context, function string) (*Result, error) {
	msg := fmt.Sprintf("there is no function %q", function)
	if len(t.funcNames) == 0 {
		msg += "; no function can be called"
	} else {
		msg += "; the functions are " + strings.Join(t.funcNames, ", ")
	}
	return t.rejected(ctx, noAction, function, &ToolError{Kind: runtime.KindUnknownFunction, Message: msg,
		Hint: &RetryHint{Functions: t.funcNames, Message: "call one of the listed functions by its exact name"}})
}
