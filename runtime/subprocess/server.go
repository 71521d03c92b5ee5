package subprocess

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/internal/decode"
	"github.com/commonagents-go/tool/internal/redact"
	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/runtime"
)

// server is one running server-mode process: line-delimited JSON-RPC 2.0 over its stdin and stdout, replies
// matched to calls by id. It is safe for concurrent use.
type server struct {
	name     string // the action's name, for messages
	p        *proc
	redact   *redact.Set   // the forwarded variables' values, masked in messages
	limit    int64         // longest reply line, without its newline
	writeSem chan struct{} // one writer at a time; waiting ends with the caller's context
	closing  atomic.Bool   // Teardown stopped it: its exit is not a death
	silenced atomic.Bool   // killed for not answering (maxSilentTimeouts)
	settled  chan struct{} // closed once its end is settled: dead is set and waiting calls have their error

	mu       sync.Mutex
	calls    map[uint64]chan reply // calls waiting for their reply
	silent   int                   // call timeouts in a row with no reply line of any kind in between
	dead     bool
	deathErr error // what calls get once dead: a *runtime.Error or an unrecoverable error
}

// maxSilentTimeouts is how many call timeouts in a row, with no reply of any kind from the server in between,
// make a server wedged: its process group is killed and the kill counts as one of its deaths.
const maxSilentTimeouts = 2

// reply is what a call waiting on a server receives: a JSON-RPC response or the server's end.
type reply struct {
	result    json.RawMessage
	rpcErr    json.RawMessage // the response's error as written; absent or null = none
	malformed bool            // a line with the call's id that is not JSON
	tooLarge  bool
	death     error
}

type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

type rpcError struct {
	Code    json.RawMessage `json:"code"`
	Message json.RawMessage `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// server returns act's running server process, starting it (again) when it has none or its process exited
// once. Starting renders the command with values; failing to start is unrecoverable.
func (i *instance) server(ctx context.Context, act *Action, values interp.Resolver) (*server, error) {
	i.mu.Lock()
	if i.closed {
		i.mu.Unlock()
		return nil, runtime.Unrecoverable(errClosed)
	}
	sl := i.slots[act]
	if sl == nil {
		sl = &slot{}
		i.slots[act] = sl
	}
	i.mu.Unlock()

	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.failed != nil {
		return nil, sl.failed
	}
	if sl.srv != nil && !sl.srv.isDead() {
		return sl.srv, nil
	}
	s, err := i.render(act, values)
	if err != nil {
		return nil, err
	}
	srv := &server{name: act.Name, redact: s.redact, limit: i.responseBytes(), writeSem: make(chan struct{}, 1),
		settled: make(chan struct{}), calls: map[uint64]chan reply{}}
	p, err := start(s, func(r io.Reader) { srv.readLoop(r, i.logger) })
	if re := (*runtime.Error)(nil); errors.As(err, &re) {
		return nil, re // the task's process limit: not remembered, a later call may start the server
	}
	if err != nil {
		sl.failed = runtime.Unrecoverable(fmt.Errorf("exec: starting the server of %s (%s): %w", act.Name, s.path, err))
		return nil, sl.failed
	}
	srv.p = p
	restart := sl.srv != nil
	sl.srv = srv
	go i.watch(sl, srv)
	i.started(ctx, facts.ExecServerStarted, act, p, map[string]any{"restart": restart})
	return srv, nil
}

// watch waits for srv's end and settles it: the first death of the slot's process is recoverable (the next call
// restarts it), the second is unrecoverable; calls still waiting get that error.
func (i *instance) watch(sl *slot, srv *server) {
	<-srv.p.done
	_ = srv.p.stdin.Close()
	status := "failed"
	if srv.p.state != nil {
		status = srv.p.state.String()
	}
	stderr := srv.p.stderr.Since(0)
	var err error
	sl.mu.Lock()
	switch {
	case srv.closing.Load():
		err = runtime.Unrecoverable(errClosed)
	case sl.failed != nil:
		err = sl.failed
	default:
		sl.deaths++
		how := fmt.Sprintf("exited (%s)", status)
		if srv.silenced.Load() {
			how = fmt.Sprintf("stopped answering (%d calls in a row timed out) and was killed", maxSilentTimeouts)
		}
		if sl.deaths >= 2 {
			sl.failed = runtime.Unrecoverable(fmt.Errorf("exec: the server of %s %s again after its restart%s",
				srv.name, how, excerpt(srv.redact, stderr)))
			err = sl.failed
		} else {
			err = runtime.Errorf(runtime.KindUnavailable, "the tool's server process %s and is restarted "+
				"for the next call%s", how, excerpt(srv.redact, stderr))
		}
	}
	sl.mu.Unlock()

	if !srv.closing.Load() {
		i.logger.Warn("exec: server process exited", "action", srv.name, "pid", srv.p.pid, "status", status)
	}
	i.observe(context.Background(), facts.ExecServerExited,
		map[string]any{"action": srv.name, "pid": srv.p.pid, "status": status, "torn_down": srv.closing.Load()})

	srv.mu.Lock()
	srv.dead, srv.deathErr = true, err
	calls := srv.calls
	srv.calls = nil
	srv.mu.Unlock()
	inFlight := err // the calls in flight were sent: the server may have acted on them
	if rerr, ok := err.(*runtime.Error); ok {
		inFlight = runtime.LostReply(rerr.Kind, "%s", rerr.Message)
	}
	for _, ch := range calls {
		ch <- reply{death: inFlight}
	}
	close(srv.settled)
}

func (s *server) isDead() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dead
}

// request sends one call to act's server and waits for its reply, at most the action's timeout.
func (i *instance) request(ctx context.Context, act *Action, call *runtime.Call) (*runtime.Result, error) {
	srv, err := i.server(ctx, act, call.Values)
	if err != nil {
		return nil, err
	}
	id := i.nextID()
	line, err := encodeRequest(id, call.Args)
	if err != nil {
		return nil, runtime.Errorf(runtime.KindInvalidArguments, "the arguments cannot be encoded as JSON: %v", err)
	}
	ch := make(chan reply, 1)
	if err := srv.register(id, ch); err != nil {
		return deathResult(err)
	}
	timeout := callTimeout(act.Timeout, i.limits)
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	mark := srv.p.stderr.Written()

	if err := srv.send(tctx, line); err != nil {
		if !errors.Is(err, errNotSent) {
			// Part of the line may be out, or the pipe is broken: the stream cannot be trusted any more.
			srv.p.kill()
			return deathResult((<-ch).death)
		}
		srv.forget(id)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("exec: %w", ctx.Err())
		}
		return srv.timeoutResult(ctx, mark, timeout, "did not read the request", false)
	}
	var r reply
	select {
	case r = <-ch:
	case <-tctx.Done():
		srv.forget(id) // a late reply is discarded by the reader
		if ctx.Err() != nil {
			return nil, fmt.Errorf("exec: %w", ctx.Err())
		}
		return srv.timeoutResult(ctx, mark, timeout, "did not reply", true)
	}
	if r.death != nil {
		return deathResult(r.death)
	}
	res := &runtime.Result{BytesOut: int64(len(line)), BytesIn: int64(len(r.result))}
	srv.p.syncStderr()
	if stderr := srv.p.stderr.Since(mark); stderr != "" {
		res.ServerData = map[string]any{"stderr": stderr}
	}
	switch {
	case r.tooLarge:
		res.Error = runtime.Errorf(runtime.KindResultTooLarge, "the server's reply is larger than %d bytes", srv.limit)
	case r.malformed:
		res.Error = runtime.Errorf(runtime.KindMalformedResponse, "the server's reply is not valid JSON")
	case !isNull(r.rpcErr):
		msg, code, data := rpcErrorParts(r.rpcErr)
		res.Error = runtime.Errorf(runtime.KindToolError, "%s", errorText(msg))
		if res.ServerData == nil {
			res.ServerData = map[string]any{}
		}
		res.ServerData["rpc_error"] = map[string]any{"code": code, "data": data}
	case r.result == nil:
		res.Error = runtime.Errorf(runtime.KindMalformedResponse, "the server's reply has neither result nor error")
	default:
		out, err := decode.JSON(r.result)
		if err != nil {
			res.Error = runtime.Errorf(runtime.KindMalformedResponse, "the server's result is not JSON")
		}
		res.Output = out
	}
	return res, nil
}

// timeoutResult is a call's timeout. When it is the maxSilentTimeouts-th in a row with no reply from the server in
// between, the server is killed, and the result waits (at most until ctx ends) until its end is settled, so that
// the next call starts a new process.
func (s *server) timeoutResult(ctx context.Context, mark int64, timeout time.Duration, what string, sent bool) (*runtime.Result, error) {
	stderr := s.p.stderr.Since(mark)
	var killed string
	if s.timedOut() {
		s.silenced.Store(true)
		s.p.kill()
		select {
		case <-s.settled:
		case <-ctx.Done():
		}
		killed = fmt.Sprintf("; after %d such calls in a row it was killed", maxSilentTimeouts)
	}
	fail := runtime.Errorf
	if sent {
		fail = runtime.LostReply
	}
	res := runtime.Fail(fail(runtime.KindTimeout, "the tool's server %s within %s%s%s", what, timeout,
		killed, excerpt(s.redact, stderr)))
	if stderr != "" {
		res.ServerData = map[string]any{"stderr": stderr}
	}
	return res, nil
}

// timedOut counts a call timeout; it reports whether the server has now been silent for maxSilentTimeouts of
// them in a row. Only the call that reaches the count reports true.
func (s *server) timedOut() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return false
	}
	s.silent++
	return s.silent == maxSilentTimeouts
}

// heard records a reply line of any kind (for a waiting call or not, well-formed or not): the server answers.
func (s *server) heard() {
	s.mu.Lock()
	s.silent = 0
	s.mu.Unlock()
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// rpcErrorParts reads a JSON-RPC error as written: an object's message, code and data, or, for any other value
// (a bare string is a common mistake), the value itself as the message.
func rpcErrorParts(raw json.RawMessage) (msg, code, data any) {
	var e rpcError
	if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) && json.Unmarshal(raw, &e) == nil {
		return rawText(e.Message), rawText(e.Code), rawText(e.Data)
	}
	return rawText(raw), nil, nil
}

// deathResult turns a server's end into a call's outcome: a recoverable Result or an unrecoverable error.
func deathResult(err error) (*runtime.Result, error) {
	if rerr, ok := err.(*runtime.Error); ok {
		return runtime.Fail(rerr), nil
	}
	return nil, err
}

func rawText(raw json.RawMessage) any {
	if raw == nil {
		return nil
	}
	v, err := decode.JSON(raw)
	if err != nil {
		return nil
	}
	return v
}

var requestHead = []byte(`{"jsonrpc":"2.0","id":`)

// encodeRequest is the request line {"jsonrpc":"2.0","id":id,"method":"execute","params":{"args":args}}.
func encodeRequest(id uint64, args map[string]any) ([]byte, error) {
	a, err := json.Marshal(argsOrEmpty(args))
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(a)+80)
	b = append(b, requestHead...)
	b = strconv.AppendUint(b, id, 10)
	b = append(b, `,"method":"execute","params":{"args":`...)
	b = append(b, a...)
	return append(b, "}}\n"...), nil
}

func (s *server) register(id uint64, ch chan reply) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return s.deathErr
	}
	s.calls[id] = ch
	return nil
}

func (s *server) forget(id uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.calls, id)
}

// errNotSent is a write that ended with ctx before any byte of the line went out.
var errNotSent = errors.New("request not sent")

// send writes one request line, one writer at a time. It returns errNotSent when ctx ended before any byte was
// written; any other error means the stream may hold part of the line.
func (s *server) send(ctx context.Context, line []byte) error {
	select {
	case s.writeSem <- struct{}{}:
	case <-ctx.Done():
		return errNotSent
	}
	defer func() { <-s.writeSem }()
	f := s.p.stdin
	if dl, ok := ctx.Deadline(); ok {
		_ = f.SetWriteDeadline(dl)
	}
	var mu sync.Mutex
	written := false
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !written {
			_ = f.SetWriteDeadline(time.Unix(1, 0))
		}
	})
	n, err := f.Write(line)
	stop()
	mu.Lock()
	written = true
	mu.Unlock()
	_ = f.SetWriteDeadline(time.Time{})
	if err != nil && n == 0 && ctx.Err() != nil {
		return errNotSent
	}
	return err
}

// readLoop reads reply lines until stdout ends, handing each to the call waiting for its id. Lines have no length
// limit below s.limit; a longer line is answered as too large when its id can be found.
func (s *server) readLoop(r io.Reader, logger *slog.Logger) {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte // a line longer than the buffer, so far
	over := false   // the line passed s.limit: long keeps only its first bytes
	for {
		chunk, err := br.ReadSlice('\n')
		full := errors.Is(err, bufio.ErrBufferFull)
		if !full && long == nil && !over { // the common case: a whole line in the buffer
			if len(chunk) > 0 {
				if lineLen(chunk) > s.limit {
					s.oversize(chunk[:min(len(chunk), oversizeKeep)], logger)
				} else {
					s.dispatch(chunk, logger)
				}
			}
			if err != nil {
				return
			}
			continue
		}
		if !over {
			long = append(long, chunk...)
			if lineLen(long) > s.limit {
				over, long = true, long[:min(len(long), oversizeKeep)]
			}
		}
		if full {
			continue
		}
		if over {
			s.oversize(long, logger)
		} else {
			s.dispatch(long, logger)
		}
		long, over = nil, false
		if err != nil {
			return
		}
	}
}

// lineLen is the length of a line without its newline.
func lineLen(line []byte) int64 {
	n := len(line)
	if n > 0 && line[n-1] == '\n' {
		n--
	}
	return int64(n)
}

// oversizeKeep is how much of a line over the limit is kept, to find its id.
const oversizeKeep = 4 << 10

// oversize answers the call a too-long reply line belongs to: the id found in its first bytes, else the only
// call waiting. When neither tells, the line is dropped and its call ends with its timeout.
func (s *server) oversize(prefix []byte, logger *slog.Logger) {
	s.heard()
	id, ok := idFromPrefix(prefix)
	if !ok {
		s.mu.Lock()
		if len(s.calls) == 1 {
			for only := range s.calls {
				id, ok = only, true
			}
		}
		s.mu.Unlock()
	}
	if !ok {
		logger.Warn("exec: dropped a server reply over the size limit whose call is unknown", "action", s.name,
			"limit", s.limit)
		return
	}
	s.deliver(id, reply{tooLarge: true})
}

// idFromPrefix finds the top-level "id" of a JSON object from its first bytes, if it comes before the data ends.
func idFromPrefix(prefix []byte) (uint64, bool) {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0, false
	}
	for {
		key, err := dec.Token()
		if err != nil {
			return 0, false
		}
		if key == "id" {
			v, _ := dec.Token()
			switch v := v.(type) {
			case json.Number:
				return parseID(json.RawMessage(v))
			case string:
				return parseID(json.RawMessage(v))
			}
			return 0, false
		}
		if !skipValue(dec) {
			return 0, false
		}
	}
}

// skipValue consumes one JSON value from dec.
func skipValue(dec *json.Decoder) bool {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return true
		}
	}
}

// dispatch routes one reply line. Lines that are not a response to a waiting call (notifications, replies to
// calls that timed out, noise) are dropped; a line that is not JSON but begins like a response with a waiting
// call's id is that call's malformed reply.
func (s *server) dispatch(line []byte, logger *slog.Logger) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	var resp rpcResponse
	if err := json.Unmarshal(line, &resp); err != nil {
		id, ok := idFromPrefix(line)
		if !ok {
			logger.Debug("exec: server wrote a line that is not a JSON-RPC response", "action", s.name, "bytes", len(line))
			return
		}
		s.heard()
		s.deliver(id, reply{malformed: true})
		return
	}
	id, ok := parseID(resp.ID)
	if !ok {
		logger.Debug("exec: server response without a usable id", "action", s.name)
		return
	}
	s.heard()
	s.deliver(id, reply{result: resp.Result, rpcErr: resp.Error})
}

func (s *server) deliver(id uint64, r reply) {
	s.mu.Lock()
	ch := s.calls[id]
	delete(s.calls, id)
	s.mu.Unlock()
	if ch != nil {
		ch <- r
	}
}

// parseID reads a response id: a non-negative integer, or such an integer in a string.
func parseID(raw json.RawMessage) (uint64, bool) {
	t := bytes.Trim(raw, `"`)
	if len(t) == 0 {
		return 0, false
	}
	id, err := strconv.ParseUint(string(t), 10, 64)
	if err == nil {
		return id, true
	}
	f, err := strconv.ParseFloat(string(t), 64)
	if err != nil || f < 0 || f != float64(uint64(f)) {
		return 0, false
	}
	return uint64(f), true
}

// stop ends the process: stdin closed, a grace period to exit, then its group killed. It returns once the end is
// settled (the exited fact reported).
func (s *server) stop(ctx context.Context) error {
	s.closing.Store(true)
	select {
	case s.writeSem <- struct{}{}: // no half-written line: the server sees a clean end of input
		_ = s.p.stdin.Close()
		<-s.writeSem
	case <-ctx.Done():
		_ = s.p.stdin.Close()
	}
	grace := maxServerGrace
	if dl, ok := ctx.Deadline(); ok {
		grace = min(grace, time.Until(dl)/2)
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-s.p.exited:
	case <-timer.C:
	}
	s.p.kill()
	select {
	case <-s.settled: // reaped, and its exit reported
		return nil
	case <-ctx.Done():
		return fmt.Errorf("exec: the server of %s (pid %d) did not end before teardown's deadline", s.name, s.p.pid)
	}
}
