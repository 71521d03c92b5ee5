package subprocess_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/commonagents-go/tool"
)

// benchTask is a task of a tool with the server action and the oneshot echo action.
func benchTask(b *testing.B) *tool.Task {
	tl := load(b, serverAction(10000)+oneshotActions())
	task, err := tl.NewTask(context.Background(), tool.TaskConfig{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = task.Close(context.Background()) })
	return task
}

// BenchmarkServerCall is one server-mode call through Task.Invoke: argument resolution, one JSON-RPC request line
// to the running rpcserver, its reply matched by id and decoded. Compare with BenchmarkRawPipeEcho.
func BenchmarkServerCall(b *testing.B) {
	task := benchTask(b)
	args := map[string]any{"op": "echo", "token": "abc"}
	ctx := context.Background()
	if _, err := task.Invoke(ctx, "work", args); err != nil { // the process starts here
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := task.Invoke(ctx, "work", args)
		if err != nil || res.IsError {
			b.Fatal(err, res.Error)
		}
	}
}

// BenchmarkRawPipeEcho is the baseline of BenchmarkServerCall: the same request to the same program written by
// hand over os/exec pipes, one line out, one line in, decoded with encoding/json.
func BenchmarkRawPipeEcho(b *testing.B) {
	cmd := exec.Command(prog("rpcserver"))
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = in.Close(); _ = cmd.Wait() })
	br := bufio.NewReader(out)
	args := map[string]any{"bytes": 0, "message": "", "ms": 0, "n": 0, "op": "echo", "text": "", "token": "abc"}
	id := 0
	b.ReportAllocs()
	for b.Loop() {
		id++
		line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "execute",
			"params": map[string]any{"args": args}})
		if _, err := in.Write(append(line, '\n')); err != nil {
			b.Fatal(err)
		}
		reply, err := br.ReadBytes('\n')
		if err != nil {
			b.Fatal(err)
		}
		var resp struct {
			ID     int `json:"id"`
			Result any `json:"result"`
		}
		if err := json.Unmarshal(reply, &resp); err != nil || resp.ID != id {
			b.Fatal(err, resp.ID)
		}
	}
}

// BenchmarkOneshotCall is one oneshot call through Task.Invoke: a new echo process per call, {"args"} on stdin,
// {"result"} read from stdout. Compare with BenchmarkRawExec.
func BenchmarkOneshotCall(b *testing.B) {
	task := benchTask(b)
	args := map[string]any{"text": "hello"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := task.Invoke(ctx, "echo", args)
		if err != nil || res.IsError {
			b.Fatal(err, res.Error)
		}
	}
}

// BenchmarkRawExec is the baseline of BenchmarkOneshotCall: os/exec runs the same program with the same stdin and
// the reply is decoded with encoding/json.
func BenchmarkRawExec(b *testing.B) {
	req := []byte(`{"args":{"count":2,"text":"hello"}}` + "\n")
	b.ReportAllocs()
	for b.Loop() {
		cmd := exec.Command(prog("echo"))
		cmd.Stdin = bytes.NewReader(req)
		out, err := cmd.Output()
		if err != nil {
			b.Fatal(err)
		}
		var resp struct {
			Result any `json:"result"`
		}
		if err := json.Unmarshal(out, &resp); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPipelineOnly is Task.Invoke of a cel action with the same parameters as BenchmarkServerCall: the
// library's per-call work (argument resolution, schema validation, allow list, result encoding) without a process,
// to tell that cost apart from the exec backend's.
func BenchmarkPipelineOnly(b *testing.B) {
	src := serverAction(10000)
	src = src[:strings.Index(src, "    execute:")] + "    execute:\n      cel: {expression: \"input.token\"}\n"
	task, err := load(b, src).NewTask(context.Background(), tool.TaskConfig{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = task.Close(context.Background()) })
	args := map[string]any{"op": "echo", "token": "abc"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := task.Invoke(ctx, "work", args)
		if err != nil || res.IsError {
			b.Fatal(err, res.Error)
		}
	}
}
