package tool_test

import (
	"context"
	"fmt"
	goruntime "runtime"
	"testing"

	"github.com/commonagents-go/tool"
)

// BenchmarkIdleTaskMemory measures the memory an idle task holds (issue 22's goal: ≤ 4 KiB): the heap growth over
// 10,000 github-pr tasks with bindings, started on the memory store and left idle, per task (B/task), with the
// Store's share (the stored allow list and event state) counted in. Each iteration starts and closes the 10,000.
func BenchmarkIdleTaskMemory(b *testing.B) {
	const n = 10_000
	ctx := context.Background()
	tl, err := tool.LoadFile(ctx, "testdata/ok/github-pr.yaml")
	if err != nil {
		b.Fatal(err)
	}
	cfg := func(i int) tool.TaskConfig {
		return tool.TaskConfig{Capability: tool.Capability{Key: "prs",
			Bindings: map[string]any{"owner": "octo", "repo": fmt.Sprint("repo", i)}}}
	}
	heap := func() uint64 {
		goruntime.GC()
		var m goruntime.MemStats
		goruntime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var perTask float64
	for b.Loop() {
		before := heap()
		tasks := make([]*tool.Task, n)
		for i := range tasks {
			if tasks[i], err = tl.NewTask(ctx, cfg(i)); err != nil {
				b.Fatal(err)
			}
		}
		perTask = float64(heap()-before) / n
		for _, task := range tasks {
			if err := task.Close(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(perTask, "B/task")
}
