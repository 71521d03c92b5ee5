package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commonagents-go/tool/internal/contain"
	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/mcpauth"
	"github.com/commonagents-go/tool/runtime"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// stderrTail bounds how much of a stdio server's stderr is kept for error messages.
const stderrTail = 4 << 10

// stderrWait bounds how long an error waits for the stderr of a server that is exiting.
const stderrWait = 500 * time.Millisecond

// excerptBytes bounds the stderr excerpt quoted in an error.
const excerptBytes = 1 << 10

// session is one connected and initialized MCP client, with the process behind it for stdio.
type session struct {
	client *client.Client
	// cancel ends the session's stream context (an SSE stream, stdio request handling).
	cancel context.CancelFunc
	proc   *exec.Cmd // nil unless stdio
	// box contains a stdio server and what it starts (proc.go); fallback says why a cgroup was wanted but not used.
	box      *contain.Box
	fallback error
	stderr   *tailBuffer // nil unless stdio
	// stderrW is the write end of the stderr pipe, closed in this process once the server started; drained is
	// closed when the server's stderr ends (the process and its group have exited).
	stderrW *os.File
	drained chan struct{}

	// waiting are the calls waiting for a reply, ended with errUnreadable when the session's stream carries a
	// message that is not JSON: mcp-go skips it, and the reply it may have been cannot be matched to its call.
	waitMu  sync.Mutex
	waiting map[*probe]context.CancelFunc
	// lost is set when the session's SSE stream ended on its own: the session is of no further use.
	lost atomic.Bool
	// slot gives back the server's process slot (runtime.Processes) once it has been closed; nil when none.
	slot func()
	// answer posts an answer to a server's request itself, for a streamable HTTP server (peer.go); nil otherwise.
	answer func(ctx context.Context, resp *transport.JSONRPCResponse) error
	// protocol is the protocol version the handshake agreed, which the answer's header names.
	protocol atomic.Pointer[string]
	// answering counts the answers being posted by answer: close waits for them (the server may hold its
	// session's end until they came), so that none outlives the session.
	answering sync.WaitGroup
	// answerMu orders answering's Add before close's Wait: once closing, an answer is posted uncounted.
	answerMu sync.Mutex
	closing  bool
}

var (
	// errUnreadable ends the calls waiting on a session whose stream carried a message that is not JSON.
	errUnreadable = errors.New("the server's stream carried a message that is not JSON")
	// errStreamLost ends the calls waiting on a session whose SSE stream ended: their replies cannot come.
	errStreamLost = errors.New("the server's event stream ended")
)

// wait registers a call waiting for its reply, under its probe; unwait unregisters it.
func (s *session) wait(p *probe, cancel context.CancelFunc) {
	s.waitMu.Lock()
	if s.waiting == nil {
		s.waiting = map[*probe]context.CancelFunc{}
	}
	s.waiting[p] = cancel
	s.waitMu.Unlock()
}

func (s *session) unwait(p *probe) {
	s.waitMu.Lock()
	delete(s.waiting, p)
	s.waitMu.Unlock()
}

// unreadable ends the calls waiting on s with errUnreadable.
func (s *session) unreadable() { s.endWaits(errUnreadable) }

// streamLost marks s lost, its SSE stream having ended (mcp-go would leave its calls waiting until their
// deadline), and ends the calls waiting on it with errStreamLost.
func (s *session) streamLost(error) {
	s.lost.Store(true)
	s.endWaits(errStreamLost)
}

func (s *session) endWaits(cause error) {
	s.waitMu.Lock()
	defer s.waitMu.Unlock()
	for p, cancel := range s.waiting {
		p.end(cause, cancel)
	}
}

// dial says how to reach a server and what to do with what it sends.
type dial struct {
	srv    *CompiledServer
	values interp.Resolver
	http   *http.Client
	// life is the parent of the session's stream context: SSE streams and stdio request handling end with it (or
	// when the session closes).
	life context.Context
	// notify receives the server's notifications (progress).
	notify func(mcp.JSONRPCNotification)
	// logger receives mcp-go's own log lines; nil discards them.
	logger *slog.Logger
	// replyWait is how long the SSE client waits for the reply to a request (mcp-go's response timeout; 0 keeps
	// its default): at least the longest bound of a request on the session, so that the request's own deadline
	// ends the wait and the client's timer never does.
	replyWait time.Duration
	// cgroup is the parent cgroup of a stdio server's own (runtime.Init.CgroupParent); "" = a process group.
	cgroup string
	// peer answers the server's requests (elicitation, sampling, roots); what it has no hook for is refused.
	peer peer
	// started, when set, is told of a stdio server that started and passed the handshake.
	started func(ctx context.Context, pid int, containment string, fallback error)
	// observe reports the task's facts; nil reports none.
	observe func(context.Context, string, map[string]any)
	// auth authorizes a remote server's requests, for server (its Name, TaskID and Subject); nil: no Authorizer.
	auth   mcpauth.Authorizer
	server mcpauth.Server
	// budget is the authorizations left to the call that started the connect; nil for a connect of no call.
	budget *authBudget
}

// connect starts or connects to the server and runs the MCP initialize handshake, all bounded by ctx: the stream
// runs on a context of its own (under d.life, since it outlives the handshake), which ends with ctx until the
// handshake has succeeded. On failure everything it started is released (a stdio server's process group is
// killed before connect returns); the error carries the stderr excerpt of a stdio server.
func connect(ctx context.Context, d dial) (*session, error) {
	s, err := open(d)
	if err != nil {
		return nil, err
	}
	life, cancel := context.WithCancel(d.life)
	s.cancel = cancel
	life = context.WithValue(life, streamKey{}, s.unreadable)
	if d.notify != nil {
		s.client.OnNotification(d.notify)
	}
	s.client.OnConnectionLost(s.streamLost) // SSE only: mcp-go calls it when the stream ends on its own
	bound := context.AfterFunc(ctx, cancel) // the stream ends with the handshake's bound until it succeeded
	ctx = withBudget(ctx, d.budget)
	if d.srv.Transport == TransportSSE {
		life = withBudget(life, d.budget) // the SSE stream's GET is the connect's first request
	}
	err = s.client.Start(life)
	d.peer.relayRequests(s.client.GetTransport(), s.answer, life, s.relaying)
	s.started()
	if s.stderrW != nil {
		_ = s.stderrW.Close() // the child has its copy
	}
	if err != nil {
		s.abandon()
		return nil, s.failure("starting", startErr(ctx, err))
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "commonagents-go/tool", Version: "1"}
	req.Params.Capabilities = d.peer.capabilities()
	init, err := s.client.Initialize(ctx, req)
	if err != nil {
		s.abandon()
		return nil, s.failure("initialize handshake", startErr(ctx, err))
	}
	s.protocol.Store(&init.ProtocolVersion)
	if init.Capabilities.Logging != nil {
		// Every message, for the tool.log facts; a server that refuses keeps its own level.
		lreq := mcp.SetLevelRequest{}
		lreq.Params.Level = mcp.LoggingLevelDebug
		_ = s.client.SetLevel(ctx, lreq)
	}
	if !bound() { // ctx ended as the handshake succeeded: the stream is being cancelled
		s.abandon()
		return nil, s.failure("initialize handshake", ctx.Err())
	}
	if d.started != nil && s.proc != nil && s.proc.Process != nil {
		d.started(ctx, s.proc.Process.Pid, s.containment(), s.fallback)
	}
	return s, nil
}

// startErr prefers the bound's end to what the transport made of it.
func startErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return err
}

// open builds the client of the server's transport; for stdio the process starts at Client.Start.
func open(d dial) (*session, error) {
	if d.logger == nil {
		d.logger = slog.New(slog.DiscardHandler)
	}
	srv := d.srv
	switch srv.Transport {
	case TransportStdio:
		return openStdio(d)
	case TransportSSE, TransportStreamableHTTP:
		u, err := srv.URL.Render(d.values)
		if err != nil {
			return nil, fmt.Errorf("rendering url: %w", err)
		}
		headers := make(map[string]string, len(srv.Headers))
		for name, t := range srv.Headers {
			v, err := t.RenderString(d.values)
			if err != nil {
				return nil, fmt.Errorf("rendering header %s: %w", name, err)
			}
			if strings.ContainsAny(v, "\r\n\x00") {
				return nil, fmt.Errorf("header %s: the value holds a line break or NUL", name)
			}
			headers[name] = v
		}
		hc := d.http
		if hc == nil {
			hc = &http.Client{}
		}
		hc = probingClient(hc)
		if d.auth != nil {
			srv := d.server
			srv.URL = u
			if hc, err = authorizingClient(hc, d.auth, srv, d.logger, d.observe); err != nil {
				return nil, err
			}
		}
		var tr transport.Interface
		if srv.Transport == TransportSSE {
			t, err := transport.NewSSE(u, transport.WithHeaders(headers), transport.WithHTTPClient(hc),
				transport.WithSSELogger(d.logger), transport.WithResponseTimeout(d.replyWait))
			if err != nil {
				return nil, fmt.Errorf("sse client: %w", err)
			}
			tr = t
		} else {
			// The session's own stream is listened on: a server may send its requests (elicitation, sampling)
			// there, not on the call's; without a hook they are then refused at once instead of waiting.
			t, err := transport.NewStreamableHTTP(u, transport.WithHTTPHeaders(headers),
				transport.WithHTTPBasicClient(hc), transport.WithHTTPLogger(d.logger), transport.WithContinuousListening())
			if err != nil {
				return nil, fmt.Errorf("streamable http client: %w", err)
			}
			tr = t
			s := &session{client: newClient(tr, d.peer)}
			s.answer = s.poster(u, headers, hc, t)
			return s, nil
		}
		return &session{client: newClient(tr, d.peer)}, nil
	}
	return nil, fmt.Errorf("unsupported transport %q", srv.Transport)
}

// openStdio renders the command line and environment: only the listed variables, plus PATH and HOME.
func openStdio(d dial) (*session, error) {
	srv := d.srv
	command, err := srv.Command.RenderString(d.values)
	if err != nil {
		return nil, fmt.Errorf("rendering command: %w", err)
	}
	args := make([]string, len(srv.Args))
	for i, t := range srv.Args {
		if args[i], err = t.RenderString(d.values); err != nil {
			return nil, fmt.Errorf("rendering args[%d]: %w", i, err)
		}
	}
	env := make([]string, 0, len(srv.Env)+2)
	for _, name := range []string{"PATH", "HOME"} {
		if _, listed := srv.Env[name]; !listed {
			if v, ok := os.LookupEnv(name); ok {
				env = append(env, name+"="+v)
			}
		}
	}
	names := make([]string, 0, len(srv.Env))
	for name := range srv.Env {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v, err := srv.Env[name].RenderString(d.values)
		if err != nil {
			return nil, fmt.Errorf("rendering env %s: %w", name, err)
		}
		env = append(env, name+"="+v)
	}
	s := &session{stderr: &tailBuffer{max: stderrTail}, drained: make(chan struct{})}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	s.stderrW = w
	go func() {
		defer close(s.drained)
		_, _ = io.Copy(s.stderr, r)
		_ = r.Close()
	}()
	cmdFunc := func(_ context.Context, command string, env, args []string) (*exec.Cmd, error) {
		// Not exec.CommandContext: the process lives as long as the task, not as the call that started it.
		cmd := exec.Command(command, args...)
		cmd.Env = env
		cmd.Stderr = w
		s.proc = cmd
		s.contain(cmd, d.cgroup)
		return cmd, nil
	}
	tr := transport.NewStdioWithOptions(command, env, args, transport.WithCommandFunc(cmdFunc),
		transport.WithCommandLogger(d.logger))
	s.client = newClient(tr, d.peer)
	return s, nil
}

// elicitor adapts the host's hook to mcp-go's handler.
type elicitor runtime.ElicitFunc

// Elicit asks the host; an accepted answer gets the schema's defaults for the fields it leaves out (SEP-1034).
func (e elicitor) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	if req.Params.Mode != "" && req.Params.Mode != "form" {
		return nil, fmt.Errorf("elicitation mode %q is not supported", req.Params.Mode)
	}
	schema, _ := req.Params.RequestedSchema.(map[string]any)
	if schema == nil && req.Params.RequestedSchema != nil {
		raw, _ := json.Marshal(req.Params.RequestedSchema)
		_ = json.Unmarshal(raw, &schema)
	}
	res, err := e(ctx, runtime.ElicitRequest{Message: req.Params.Message, Schema: schema})
	if err != nil {
		return nil, err
	}
	out := &mcp.ElicitationResult{}
	out.Action = mcp.ElicitationResponseAction(res.Action)
	if res.Action == runtime.ElicitAccept {
		content := make(map[string]any, len(res.Content))
		for k, v := range res.Content {
			content[k] = v
		}
		props, _ := schema["properties"].(map[string]any)
		for name, p := range props {
			if def, ok := p.(map[string]any)["default"]; ok {
				if _, given := content[name]; !given {
					content[name] = def
				}
			}
		}
		out.Content = content
	}
	return out, nil
}

// failure describes a failed start or handshake, with the stderr excerpt of a stdio server.
func (s *session) failure(what string, err error) error {
	if s.stderr != nil {
		// A server that died has written its last words; give the pipe a moment to deliver them.
		select {
		case <-s.drained:
		case <-time.After(stderrWait):
		}
		if tail := s.stderr.excerpt(); tail != "" {
			return fmt.Errorf("%s: %w (stderr: %s)", what, err, tail)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// exited reports whether a stdio server's process group has exited (its stderr ended): a request sent after
// that is provably not read. It is false for remote servers.
func (s *session) exited() bool {
	if s.drained == nil {
		return false
	}
	select {
	case <-s.drained:
		return true
	default:
		return false
	}
}

// abandon releases a session that failed to start, without waiting for a polite exit.
func (s *session) abandon() {
	s.kill()
	if s.cancel != nil {
		s.cancel()
	}
	go func() {
		_ = s.client.Close()
		s.release()
	}()
}

// close ends the session within ctx: the client is closed (for stdio: stdin closed, then signals), and a stdio
// server's containment (its cgroup, else its process group) is killed once half of the remaining time is spent
// or the client has closed, and removed once the server was reaped.
func (s *session) close(ctx context.Context) error {
	if s.slot != nil {
		defer s.slot()
	}
	if s.cancel != nil {
		defer s.cancel()
	}
	{
		s.answerMu.Lock()
		s.closing = true
		s.answerMu.Unlock()
		answered := make(chan struct{})
		go func() { s.answering.Wait(); close(answered) }()
		select {
		case <-answered:
		case <-ctx.Done(): // each answer has its own bound (answerBound)
		}
	}
	done := make(chan error, 1)
	go func() { done <- s.client.Close() }()
	if s.proc == nil {
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
			return fmt.Errorf("closing the client: %w", ctx.Err())
		}
	}
	grace := time.Second
	if dl, ok := ctx.Deadline(); ok {
		grace = min(grace, time.Until(dl)/2)
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	var err error
	select {
	case err = <-done:
		s.release() // what the server started ends with it
		return closeErr(err)
	case <-timer.C:
	case <-ctx.Done():
	}
	s.kill()
	select {
	case err = <-done:
		s.release()
		return closeErr(err)
	case <-ctx.Done():
		s.release() // the server was killed: its cgroup empties without waiting for the client
		return fmt.Errorf("waiting for the server process to exit: %w", ctx.Err())
	}
}

// closeErr drops the exit status of a server we stopped ourselves.
func closeErr(err error) error {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return nil
	}
	return err
}

// tailBuffer keeps the last max bytes written to it. It is safe for concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

// excerpt returns the last excerptBytes of stderr, trimmed, on one line.
func (b *tailBuffer) excerpt() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf
	if len(s) > excerptBytes {
		s = s[len(s)-excerptBytes:]
	}
	return strings.Join(strings.Fields(strings.ToValidUTF8(string(s), "")), " ")
}

// sampler adapts the host's hook to mcp-go's handler; message contents go both ways through their JSON.
type sampler runtime.SampleFunc

// CreateMessage asks the host's LLM.
func (f sampler) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	in := runtime.SampleRequest{SystemPrompt: req.SystemPrompt, MaxTokens: req.MaxTokens}
	for _, m := range req.Messages {
		var c runtime.Content
		raw, err := json.Marshal(m.Content)
		if err == nil {
			err = json.Unmarshal(raw, &c)
		}
		if err != nil {
			return nil, fmt.Errorf("a sampling message's content is not one block: %w", err)
		}
		in.Messages = append(in.Messages, runtime.SampleMessage{Role: string(m.Role), Content: c})
	}
	res, err := f(ctx, in)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(res.Message.Content)
	if err != nil {
		return nil, err
	}
	content, err := mcp.UnmarshalContent(raw)
	if err != nil {
		return nil, err
	}
	out := &mcp.CreateMessageResult{Model: res.Model, StopReason: res.StopReason}
	out.Role, out.Content = mcp.Role(res.Message.Role), content
	return out, nil
}

// poster returns a func that posts an answer to a server's request to the streamable HTTP server at u, as mcp-go
// would, but bounded by a context of the caller's choosing: mcp-go posts it with the context of the call whose
// stream carried the request, which has ended when the answer is that the call's client is gone.
func (s *session) poster(u string, headers map[string]string, hc *http.Client, t *transport.StreamableHTTP) func(context.Context, *transport.JSONRPCResponse) error {
	return func(ctx context.Context, resp *transport.JSONRPCResponse) error {
		body, err := json.Marshal(resp)
		if err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
		if err != nil {
			return err
		}
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if id := t.GetSessionId(); id != "" {
			req.Header.Set(transport.HeaderKeySessionID, id)
		}
		if v := s.protocol.Load(); v != nil && *v != "" {
			req.Header.Set(transport.HeaderKeyProtocolVersion, *v)
		}
		res, err := hc.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<16))
		_ = res.Body.Close()
		if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusAccepted {
			return fmt.Errorf("the server answered HTTP %d", res.StatusCode)
		}
		return nil
	}
}

// relaying counts a server's request being relayed until the returned func is called: close waits for it (bounded
// by its ctx), so that the answer reaches the server before the session ends. Once closing, it counts nothing.
func (s *session) relaying() func() {
	s.answerMu.Lock()
	defer s.answerMu.Unlock()
	if s.closing {
		return func() {}
	}
	s.answering.Add(1)
	return s.answering.Done
}
