package subprocess

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/internal/decode"
	"github.com/commonagents-go/tool/internal/redact"
	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/runtime"
)

// oneshot runs one process for one call: {"args": {...}} on stdin, one JSON object on stdout.
func (i *instance) oneshot(ctx context.Context, act *Action, call *runtime.Call) (*runtime.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	s, err := i.render(act, call.Values)
	if err != nil {
		return nil, err
	}
	req, err := json.Marshal(map[string]any{"args": argsOrEmpty(call.Args)})
	if err != nil {
		return nil, runtime.Errorf(runtime.KindInvalidArguments, "the arguments cannot be encoded as JSON: %v", err)
	}
	req = append(req, '\n')
	limit := i.responseBytes()
	out := &capped{max: limit}
	overflow := make(chan struct{})
	p, err := start(s, func(r io.Reader) {
		if out.readFrom(r) {
			close(overflow)
		}
	})
	if re := (*runtime.Error)(nil); errors.As(err, &re) {
		return nil, re // the task's process limit: this call fails, the task goes on
	}
	if err != nil {
		return nil, runtime.Unrecoverable(fmt.Errorf("exec: starting %s: %w", s.path, err))
	}
	i.started(ctx, facts.ExecProcessStarted, act, p, map[string]any{})
	go func() {
		// A program may exit without reading stdin: the write then fails, which is its business.
		_, _ = p.stdin.Write(req)
		_ = p.stdin.Close()
	}()

	tctx, cancel := context.WithTimeout(ctx, callTimeout(act.Timeout, i.limits))
	defer cancel()
	var timedOut bool
	select {
	case <-p.done:
	case <-overflow:
	case <-tctx.Done():
		timedOut = ctx.Err() == nil
	}
	p.kill()
	<-p.done
	_ = p.stdin.Close() // ends the writer should a process outside the group still hold stdin unread
	// The reader has ended (done): the buffer decides, not which of done and overflow the select saw first.
	tooLarge := int64(out.buf.Len()) > limit

	res := &runtime.Result{BytesOut: int64(len(req)), BytesIn: int64(out.buf.Len()),
		ServerData: map[string]any{"containment": p.box.Mode()}}
	stderr := p.stderr.Since(0)
	if stderr != "" {
		res.ServerData["stderr"] = stderr
	}
	stderrLine := excerpt(s.redact, stderr)
	if p.state != nil {
		res.ServerData["exit_code"] = p.state.ExitCode()
	}
	switch {
	case tooLarge:
		res.Error = runtime.Errorf(runtime.KindResultTooLarge, "the program wrote more than %d bytes to stdout", limit)
		return res, nil
	case timedOut:
		// The program ran, maybe far enough to act: what it did is unknown.
		res.Error = runtime.LostReply(runtime.KindTimeout, "the program did not finish within %s and was killed%s",
			callTimeout(act.Timeout, i.limits), stderrLine)
		return res, nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("exec: %w", ctx.Err())
	}
	var pending bool
	res.Output, pending, res.Error = decodeOneshot(out.buf.Bytes(), p.state, stderrLine)
	if pending {
		res.ServerData["status"] = "pending"
	}
	return res, nil
}

// decodeOneshot maps a finished program's stdout and exit status to an output or a recoverable error; pending
// reports an output made from {"pending": ...}. stderrLine is the excerpt of stderr for messages.
func decodeOneshot(stdout []byte, state *os.ProcessState, stderrLine string) (out any, pending bool, err *runtime.Error) {
	trimmed := bytes.TrimSpace(stdout)
	var v any
	var decodeErr error
	if len(trimmed) > 0 {
		v, decodeErr = decode.JSON(trimmed)
	}
	obj, isObject := v.(map[string]any)
	if state == nil || !state.Success() {
		status := "failed"
		if state != nil {
			status = state.String() // "exit status 3", "signal: killed"
		}
		if msg, ok := present(obj, "error"); ok && decodeErr == nil {
			return nil, false, runtime.Errorf(runtime.KindToolError, "%s", errorText(msg))
		}
		return nil, false, runtime.Errorf(runtime.KindToolError, "the program failed (%s)%s", status, stderrLine)
	}
	switch {
	case len(trimmed) == 0:
		return nil, false, runtime.Errorf(runtime.KindMalformedResponse, "the program wrote nothing to stdout%s", stderrLine)
	case decodeErr != nil:
		return nil, false, runtime.Errorf(runtime.KindMalformedResponse, "the program's stdout is not JSON%s", stderrLine)
	case !isObject:
		return nil, false, runtime.Errorf(runtime.KindMalformedResponse,
			`the program's stdout is not a JSON object with "result", "error" or "pending"`)
	}
	return fromEnvelope(obj)
}

// fromEnvelope reads {"error": ...}, {"pending": ...} or {"result": ...}, in that order of precedence; a key whose
// value is null counts as absent (producers that always write every key write {"result": v, "error": null}).
func fromEnvelope(obj map[string]any) (out any, pending bool, err *runtime.Error) {
	if msg, ok := present(obj, "error"); ok {
		return nil, false, runtime.Errorf(runtime.KindToolError, "%s", errorText(msg))
	}
	if p, ok := present(obj, "pending"); ok {
		return map[string]any{"pending": p}, true, nil
	}
	if r, ok := obj["result"]; ok {
		return r, false, nil
	}
	return nil, false, runtime.Errorf(runtime.KindMalformedResponse,
		`the program's stdout is a JSON object without "result", "error" or "pending"`)
}

// present returns obj[key] when it is there and not null.
func present(obj map[string]any, key string) (any, bool) {
	v, ok := obj[key]
	return v, ok && v != nil
}

// maxMessage bounds the text a program's error or stderr puts into a message for the LLM.
const maxMessage = 1024

func errorText(v any) string {
	s, ok := v.(string)
	if !ok {
		s = interp.Text(v)
	}
	if s == "" {
		s = "the program reported an error"
	}
	return truncate(s, maxMessage)
}

// excerpt is ": " and the last non-empty line of stderr, bounded, with the values in secrets masked, or "" when
// stderr is empty. The whole bounded stderr is in ServerData; the last line is usually the error itself, not a
// stack.
func excerpt(secrets *redact.Set, stderr string) string {
	s := strings.TrimRight(secrets.String(stderr), " \t\r\n")
	if s == "" {
		return ""
	}
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return ": " + truncate(strings.TrimSpace(s), 300)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

func argsOrEmpty(args map[string]any) map[string]any {
	if args == nil {
		return map[string]any{}
	}
	return args
}

// capped collects a stream up to max bytes.
type capped struct {
	buf bytes.Buffer
	max int64
}

// readFrom reads r to EOF; it returns true, and stops reading, when r has more than max bytes.
func (c *capped) readFrom(r io.Reader) bool {
	n, _ := c.buf.ReadFrom(io.LimitReader(r, c.max+1))
	return n > c.max
}
