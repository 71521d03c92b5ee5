package tool_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/commonagents-go/tool"
)

// Limits.CELBytes bounds what an expression builds, which CELCost (a count of operations) does not: doubling a
// 1 MiB argument five times is a recoverable result_too_large in a cel action and a filter_error in a filter,
// well before the 32 MiB it would build.
func TestCELSizeLimit(t *testing.T) {
	doubling := "[%s]" + strings.Repeat(".map(x, x + x)", 5)
	src := manifestHeader("sizes") + `actions:
  - name: grow
    description: Doubles a text five times.
    parameters:
      properties:
        s: {type: string}
    execute:
      cel:
        expression: "` + strings.Replace(doubling, "%s", "input.s", 1) + `"
events:
  - name: grown
    description: A payload whose text doubles.
    message: "grown"
    receive:
      webhook:
        filter: "` + strings.Replace(doubling, "%s", "event.payload.s", 1) + `.size() > 0"
`
	tl := mustLoadSrc(t, src, tool.WithLimits(tool.Limits{CELCost: 100_000}))
	task := newTask(t, tl, tool.TaskConfig{})
	s := strings.Repeat("x", 1<<20)

	var res *tool.Result
	n := allocated(1, func() { res = mustInvoke(t, task, "grow", map[string]any{"s": s}) })
	if !res.IsError || res.Error.Kind != "result_too_large" || !strings.Contains(res.Error.Message, "size limit exceeded") {
		t.Fatalf("result = %+v, want a recoverable result_too_large", res.Error)
	}
	if n > 48*mib {
		t.Errorf("the call allocated %.0f MiB", n/mib)
	}
	// A small argument still works.
	if res := mustInvoke(t, task, "grow", map[string]any{"s": "ab"}); res.IsError || len(res.Output.([]any)[0].(string)) != 64 {
		t.Errorf("small argument: %+v", res)
	}

	in := &tool.Inbound{Headers: http.Header{}, Body: []byte(`{"s":"` + s[:1<<19] + `"}`)} // 512 KiB: doubled five times, 16 MiB
	d := deliver(t, task, in)
	wantOutcome(t, d, "grown:filter_error")
	if !strings.Contains(d.Discarded[0].Detail, "size limit exceeded") {
		t.Errorf("detail = %q, want the size limit named", d.Discarded[0].Detail)
	}
}
