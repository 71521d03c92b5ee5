package tool_test

import "testing"

// Actions whose names sanitize alike would share a function name: Load refuses them.
func TestRegressionFunctionNameCollision(t *testing.T) {
	t.Parallel()
	verr := mustFailSrc(t, `kind: commonagents.info/v1beta2/tool
namespace: tests
name: c
description: x
actions:
  - name: get-item
    description: x
    execute: {cel: {expression: "'dash'"}}
  - name: get_item
    description: x
    execute: {cel: {expression: "'underscore'"}}
`)
	if len(verr.Problems) != 1 || verr.Problems[0].Path != "actions[1].name" || verr.Problems[0].Type != "duplicate" {
		t.Errorf("problems = %v, want one duplicate at actions[1].name", verr.Problems)
	}
}
