package tool_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/celenv"
)

const benchSecret = "bench-webhook-secret"

// commentPayload is a GitHub issue_comment payload of about 1 KB for repository owner/repo.
func commentPayload(owner, repo string) string {
	p := fmt.Sprintf(`{"action":"created","issue":{"number":42,"title":"Fix the flaky router test","pull_request":`+
		`{"url":"https://api.github.com/repos/%[1]s/%[2]s/pulls/42"},"user":{"login":"alice","id":1001}},`+
		`"comment":{"id":99001,"body":"Looks good; could you add a test for the empty allow list?","user":{"login":"bob","id":1002},`+
		`"created_at":"2026-11-22T10:00:00Z"},"repository":{"id":123456,"name":%[2]q,"full_name":"%[1]s/%[2]s","private":false,`+
		`"owner":{"login":%[1]q,"id":5000,"type":"Organization"},"html_url":"https://github.com/%[1]s/%[2]s","default_branch":"main"},`+
		`"sender":{"login":"bob","id":1002,"type":"User","site_admin":false},"installation":{"id":777},`+
		`"labels":[{"name":"bug"},{"name":"ci"}],"padding":"`, owner, repo)
	return p + strings.Repeat("x", max(0, 1020-len(p))) + `"}`
}

func githubPR(b *testing.B) *tool.Tool {
	b.Helper()
	src, err := os.ReadFile("testdata/ok/github-pr.yaml")
	if err != nil {
		b.Fatal(err)
	}
	tl, err := tool.Load(context.Background(), src, tool.WithSettings(map[string]any{"github_webhook_secret": benchSecret}))
	if err != nil {
		b.Fatal(err)
	}
	return tl
}

// BenchmarkDeliver measures Task.Deliver of a 1 KB GitHub-signed comment payload through one task of the
// github-pr tool (goal ≤ 8 µs/op): signature check, JSON parse, two events' filters over the allow list,
// message rendering, dedupe check and record, Sink. The baseline is what a hand-written handler must do at
// least: verify the HMAC, json.Unmarshal the body and evaluate the same compiled filter once with celenv.
// The -c8 variants run both at concurrency 8 (issue 41, item 5): eight goroutines share b.N, each delivering to
// a task of its own, so ns/op is wall time per delivery (the inverse of throughput), against the baseline's at
// the same concurrency.
func BenchmarkDeliver(b *testing.B) {
	tl := githubPR(b)
	ctx := context.Background()
	newTask := func() *tool.Task {
		task, err := tl.NewTask(ctx, tool.TaskConfig{Capability: tool.Capability{Bindings: map[string]any{"owner": "octo", "repo": "hello"}},
			Sink: tool.SinkFunc(func(context.Context, tool.Activation) error { return nil })})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { task.Close(ctx) })
		return task
	}
	task := newTask()
	body := []byte(commentPayload("octo", "hello"))
	in := signed(benchSecret, "", string(body))
	b.Run("deliver-1KB-signed", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			d, err := task.Deliver(ctx, in)
			if err != nil || len(d.Activations) != 1 {
				b.Fatalf("%+v %v", d, err)
			}
		}
	})
	n := 0 // across runs of the sub-benchmark: every id is new
	b.Run("deliver-1KB-signed-with-delivery-id", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n++
			in := signed(benchSecret, fmt.Sprint("d-", n), string(body))
			if d, err := task.Deliver(ctx, in); err != nil || len(d.Activations) != 1 {
				b.Fatalf("%+v %v", d, err)
			}
		}
	})
	var block struct{ Filter string }
	if err := json.Unmarshal(tl.Manifest().Events[0].Receive["webhook"], &block); err != nil {
		b.Fatal(err)
	}
	filter, err := celenv.Compile(celenv.ScopeFilter, block.Filter, celenv.Limits{Cost: tool.DefaultLimits().CELCost})
	if err != nil {
		b.Fatal(err)
	}
	// baseline is the hand-written handler: an error when the signature or the filter says no.
	baseline := func() error {
		mac := hmac.New(sha256.New, []byte(benchSecret))
		mac.Write(body)
		want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
		if !hmac.Equal([]byte(want), []byte(in.Headers.Get("X-Hub-Signature-256"))) {
			return errors.New("signature")
		}
		var payload any
		if err := json.Unmarshal(body, &payload); err != nil {
			return err
		}
		params := map[string]any{"owner": "octo", "repo": "hello"}
		ok, err := filter.EvalBool(ctx, map[string]any{"event": map[string]any{"payload": payload}, "parameters": params, "now": ""})
		if err != nil || !ok {
			return fmt.Errorf("filter: %v %v", ok, err)
		}
		return nil
	}
	b.Run("baseline-hmac-unmarshal-eval", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if err := baseline(); err != nil {
				b.Fatal(err)
			}
		}
	})
	const c = 8
	tasks := []*tool.Task{task}
	for len(tasks) < c {
		tasks = append(tasks, newTask())
	}
	b.Run("deliver-1KB-signed-c8", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		concurrently(b, c, func(w int) error {
			d, err := tasks[w].Deliver(ctx, in)
			if err == nil && len(d.Activations) != 1 {
				err = fmt.Errorf("%+v", d)
			}
			return err
		})
	})
	b.Run("baseline-hmac-unmarshal-eval-c8", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		concurrently(b, c, func(int) error { return baseline() })
	})
}

// concurrently runs op b.N times in all from c goroutines (op's argument: which one) and fails b on op's first
// error.
func concurrently(b *testing.B, c int, op func(w int) error) {
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	b.ResetTimer()
	for w := range c {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := op(w); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRouterDispatch measures Router.Dispatch of a signed comment to the one matching task among n tasks
// of the github-pr tool, each bound to its own repository (goal ≤ 25 µs/op, and the cost at 100,000 tasks at
// most twice the cost at 100). The baseline is Task.Deliver of the same payload straight to that task.
func BenchmarkRouterDispatch(b *testing.B) {
	tl := githubPR(b)
	ctx := context.Background()
	sink := tool.SinkFunc(func(context.Context, tool.Activation) error { return nil })
	for _, n := range []int{100, 10_000, 100_000} {
		r := tool.NewRouter(tool.RouterOptions{})
		var target *tool.Task
		tasks := make([]*tool.Task, 0, n)
		for i := range n {
			task, err := tl.NewTask(ctx, tool.TaskConfig{Sink: sink,
				Capability: tool.Capability{Bindings: map[string]any{"owner": "octo", "repo": fmt.Sprint("repo-", i)}}})
			if err != nil {
				b.Fatal(err)
			}
			if err := r.Add(task); err != nil {
				b.Fatal(err)
			}
			tasks = append(tasks, task)
			if i == n/2 {
				target = task
			}
		}
		in := signed(benchSecret, "", commentPayload("octo", fmt.Sprint("repo-", n/2)))
		b.Run(fmt.Sprintf("tasks-%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ds, err := r.Dispatch(ctx, "tools", "github-pr", in)
				if err != nil || len(ds) != 1 || ds[0].TaskID != target.ID() || len(ds[0].Activations) != 1 {
					b.Fatalf("%+v %v", ds, err)
				}
			}
		})
		if n == 100 {
			b.Run("baseline-deliver-to-the-task", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if d, err := target.Deliver(ctx, in); err != nil || len(d.Activations) != 1 {
						b.Fatalf("%+v %v", d, err)
					}
				}
			})
		}
		for _, task := range tasks {
			_ = task.Close(ctx)
		}
	}
}

// BenchmarkRouterDispatchPing measures Router.Dispatch of a signed GitHub ping (`{"zen":…,"hook_id":…}`: none
// of the fields the filters' equality conjuncts read) to 10,000 github-pr tasks (issue 28, finding 2). The
// baselines in the same run: Deliver of the ping to every task (what Dispatch did before: it visited them all),
// and Dispatch of a comment to its one task among the same 10,000.
func BenchmarkRouterDispatchPing(b *testing.B) {
	tl := githubPR(b)
	ctx := context.Background()
	const n = 10_000
	r := tool.NewRouter(tool.RouterOptions{})
	tasks := make([]*tool.Task, 0, n)
	for i := range n {
		task, err := tl.NewTask(ctx, tool.TaskConfig{
			Capability: tool.Capability{Bindings: map[string]any{"owner": "octo", "repo": fmt.Sprint("repo-", i)}}})
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Add(task); err != nil {
			b.Fatal(err)
		}
		tasks = append(tasks, task)
	}
	b.Cleanup(func() {
		for _, task := range tasks {
			_ = task.Close(ctx)
		}
	})
	ping := signed(benchSecret, "", `{"zen":"Keep it logically awesome.","hook_id":123456,"hook":{"type":"Repository","active":true}}`)
	b.Run("tasks-10000", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if ds, err := r.Dispatch(ctx, "tools", "github-pr", ping); err != nil || len(ds) != 0 {
				b.Fatalf("%d deliveries, %v; want none", len(ds), err)
			}
		}
	})
	b.Run("baseline-deliver-to-every-task", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, task := range tasks {
				if d, err := task.Deliver(ctx, ping); err != nil || len(d.Activations) != 0 {
					b.Fatalf("%+v %v", d, err)
				}
			}
		}
	})
	comment := signed(benchSecret, "", commentPayload("octo", fmt.Sprint("repo-", n/2)))
	b.Run("baseline-keyed-dispatch", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if ds, err := r.Dispatch(ctx, "tools", "github-pr", comment); err != nil || len(ds) != 1 {
				b.Fatalf("%d deliveries, %v; want one", len(ds), err)
			}
		}
	})
}
