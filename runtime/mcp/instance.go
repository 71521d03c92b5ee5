package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/internal/httpspec"
	"github.com/commonagents-go/tool/interp"
	"github.com/commonagents-go/tool/mcpauth"
	"github.com/commonagents-go/tool/runtime"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// DefaultTimeout bounds one tools/call, and the start and handshake of a server, when neither the server block nor
// the host's limits set a bound (SPEC §14).
const DefaultTimeout = runtime.DefaultCallTimeout

// DefaultTeardownTimeout bounds closing the task's servers when the host's limits set no bound (SPEC §14).
const DefaultTeardownTimeout = runtime.DefaultTeardownTimeout

// errClosed is returned by calls that arrive after Teardown started.
var errClosed = errors.New("mcp: the task's servers are torn down")

// Initialize starts (stdio) or connects to (sse, streamable_http) the server of in.Action and runs the MCP
// initialize handshake, bounded by ctx (the task's context: Task.Close ends it) and by the server's timeout. Any
// failure wraps runtime.ErrUnrecoverable and, for stdio, quotes the end of the server's stderr; a stdio server
// whose start or handshake fails or is cut short is killed before Initialize returns. Other servers of the task
// start on their first call, and so does a remote server when the task has an Authorizer (runtime.Init), so that
// an authorization it needs is a recoverable result of that call rather than the task's end.
func (b Backend) Initialize(ctx context.Context, in *runtime.Init) (runtime.Instance, error) {
	act, err := action(in.Action)
	if err != nil {
		return nil, err
	}
	life, cancel := context.WithCancel(context.Background())
	i := &instance{
		http: in.HTTPClient, limits: in.Limits, observe: in.Observe, logger: in.Logger, cgroup: in.CgroupParent,
		procs: in.Processes,
		auth:  in.Authorizer, authServer: mcpauth.Server{TaskID: in.TaskID, Subject: in.Subject},
		life: life, cancel: cancel, servers: map[string]*server{}, progress: map[string]progressTarget{},
	}
	i.peer = peer{elicit: in.Elicit, sample: in.Sample, roots: in.Roots, relay: in.Relay,
		wait: i.longestBound(0, append(in.Actions, act)), sole: i.soleCall}
	i.replyWait = i.longestBound(b.replyFloor(), append(in.Actions, act))
	if i.auth != nil && act.Server.Transport != TransportStdio {
		// The triggering call connects, with its own budget of authorizations: a server that needs the user's
		// authorization is then that call's recoverable result, not the task's end.
		return i, nil
	}
	slot := func() {}
	if act.Server.Transport == TransportStdio {
		if slot, err = i.procs.Acquire("the stdio server " + act.Key); err != nil {
			// At the process limit: the triggering call, which starts the server through session, reports it
			// as recoverable.
			return i, nil
		}
	}
	hctx, hcancel := context.WithTimeout(ctx, i.connectTimeout(act))
	defer hcancel()
	sess, err := connect(hctx, i.dial(act, in.Values))
	if err != nil {
		slot()
		cancel()
		return nil, runtime.Unrecoverable(fmt.Errorf("server %s (%s): %w", act.Key, act.Server.Transport, err))
	}
	sess.slot = slot
	i.servers[act.Key] = &server{sess: sess}
	return i, nil
}

func action(a runtime.Action) (*Action, error) {
	act, ok := a.(*Action)
	if !ok || act.Server == nil {
		return nil, runtime.Unrecoverable(fmt.Errorf("mcp: not a prepared mcp action (%T)", a))
	}
	return act, nil
}

// instance holds a task's servers, one per server block. It is safe for concurrent use.
type instance struct {
	http    *http.Client
	limits  runtime.Limits
	observe func(context.Context, string, map[string]any)
	logger  *slog.Logger
	cgroup  string             // runtime.Init.CgroupParent
	procs   *runtime.Processes // runtime.Init.Processes: a stdio server takes a slot
	// peer answers the servers' requests: the host's hooks (runtime.Init.Elicit, Sample, Roots, Relay).
	peer peer
	// auth authorizes the requests to remote servers (runtime.Init.Authorizer), as authServer (TaskID, Subject).
	auth       mcpauth.Authorizer
	authServer mcpauth.Server
	life       context.Context // ends at Teardown
	cancel     context.CancelFunc
	// replyWait is the SSE client's wait for a reply: the longest bound of a call or start on the task's servers.
	replyWait time.Duration

	mu         sync.Mutex
	servers    map[string]*server // by Action.Key
	closed     bool
	connecting sync.WaitGroup // connects running in the background

	progressMu sync.Mutex
	progress   map[string]progressTarget // by progress token (the call id)

	once        sync.Once
	teardownErr error
}

// server is one server block's connection within the task. Its fields are guarded by instance.mu.
type server struct {
	sess    *session // the live session; nil before the first connect or after one was lost
	pending *round   // non-nil while a connect runs
	failed  error    // the server could not be started: the task is over
}

// round is one connect of a server, for the calls waiting on it: done is closed when it ends, and err is then
// its failure when it is not remembered (the server wants an authorization), for those calls only.
type round struct {
	done chan struct{}
	err  error
}

// progressTarget is where the progress notifications of one call go.
type progressTarget struct {
	ctx    context.Context
	callID string
	action string
}

// session returns the live session of act's server, connecting first when there is none (once, however many
// calls arrive together). The connect runs in the background, bounded by the server's timeout and ended by
// Teardown, so that a caller that gives up (ctx) neither cancels it for the others nor waits for it. A failed
// connect is unrecoverable and remembered, unless the server wants an authorization the Authorizer did not
// give: that is a recoverable error of the calls that waited for the connect, and the next call connects anew.
// budget is the calling call's authorizations, which a connect it starts spends.
func (i *instance) session(ctx context.Context, act *Action, values interp.Resolver, budget *authBudget) (*session, error) {
	for {
		i.mu.Lock()
		if i.closed {
			i.mu.Unlock()
			return nil, runtime.Unrecoverable(errClosed)
		}
		s := i.servers[act.Key]
		if s == nil {
			s = &server{}
			i.servers[act.Key] = s
		}
		if s.sess != nil && s.sess.lost.Load() { // its SSE stream ended: connect anew
			go i.release(s.sess)
			s.sess = nil
		}
		switch {
		case s.sess != nil:
			i.mu.Unlock()
			return s.sess, nil
		case s.failed != nil:
			i.mu.Unlock()
			return nil, s.failed
		case s.pending == nil:
			slot := func() {}
			if act.Server.Transport == TransportStdio {
				var err error
				if slot, err = i.procs.Acquire("the stdio server " + act.Key); err != nil {
					i.mu.Unlock()
					return nil, err // recoverable: the task goes on, and nothing is remembered
				}
			}
			s.pending = &round{done: make(chan struct{})}
			i.connecting.Add(1)
			go i.connect(act, s, values, slot, budget)
		}
		wait := s.pending
		i.mu.Unlock()
		select {
		case <-wait.done:
			if wait.err != nil {
				return nil, wait.err
			}
		case <-ctx.Done():
			return nil, fmt.Errorf("mcp: waiting for server %s: %w", act.Key, ctx.Err())
		}
	}
}

// connect starts s's session; s.pending is set and is closed when connect returns. It runs on the task's life
// (Teardown ends it), bounded by the server's timeout. slot is the server's process slot (runtime.Processes): the
// session gives it back when it is closed, a failed connect at once. budget is the authorizations of the call
// that started it.
func (i *instance) connect(act *Action, s *server, values interp.Resolver, slot func(), budget *authBudget) {
	defer i.connecting.Done()
	cctx, cancel := context.WithTimeout(i.life, i.connectTimeout(act))
	d := i.dial(act, values)
	d.budget = budget
	sess, err := connect(cctx, d)
	cancel()
	var unauthorized error
	if err != nil {
		slot()
		if e := authFailure(act.Key, err); e != nil {
			unauthorized = e
		} else {
			err = runtime.Unrecoverable(fmt.Errorf("mcp: server %s (%s): %w", act.Key, act.Server.Transport, err))
		}
	} else {
		sess.slot = slot
	}

	i.mu.Lock()
	r := s.pending
	s.pending = nil
	r.err = unauthorized
	close(r.done)
	switch {
	case i.closed && err == nil:
		// Teardown ran while we connected: nobody else will close this session.
		i.mu.Unlock()
		i.release(sess)
		return
	case unauthorized != nil: // not remembered: the next call asks the Authorizer again
	case err != nil:
		s.failed = err
	default:
		s.sess = sess
	}
	i.mu.Unlock()
}

func (i *instance) dial(act *Action, values interp.Resolver) dial {
	srv := i.authServer
	srv.Name = act.Key
	return dial{srv: act.Server, values: values, http: i.http, life: i.life,
		notify: func(n mcp.JSONRPCNotification) { i.notify(act.Key, n) }, logger: i.logger,
		peer: i.peer, auth: i.auth, server: srv, observe: i.observe,
		replyWait: i.replyWait, cgroup: i.cgroup, started: func(ctx context.Context, pid int, containment string, fallback error) {
			if fallback != nil {
				i.logger.Warn("mcp: the server runs in a process group, not a cgroup", "server", act.Key, "error", fallback)
			}
			i.observe(context.WithoutCancel(ctx), facts.MCPServerStarted,
				map[string]any{"server": act.Key, "pid": pid, "containment": containment})
		}}
}

// longestBound is the longest call or start timeout of actions, at least floor.
func (i *instance) longestBound(floor time.Duration, actions []runtime.Action) time.Duration {
	d := floor
	for _, a := range actions {
		if act, ok := a.(*Action); ok && act.Server != nil {
			d = max(d, i.callTimeout(act), i.connectTimeout(act))
		}
	}
	return d
}

// release closes a session that is no longer used, within the teardown bound.
func (i *instance) release(sess *session) {
	ctx, cancel := context.WithTimeout(context.Background(), i.teardownTimeout())
	defer cancel()
	if err := sess.close(ctx); err != nil {
		i.logger.Warn("mcp: closing a lost server session", "error", err)
	}
}

// drop forgets sess as act's live session (it was found lost) and closes it in the background.
func (i *instance) drop(act *Action, sess *session) {
	i.mu.Lock()
	s := i.servers[act.Key]
	mine := s != nil && s.sess == sess
	if mine {
		s.sess = nil
	}
	i.mu.Unlock()
	if mine {
		if sess.slot != nil {
			sess.slot() // now, not once closed: the server started in its place takes the slot
		}
		go i.release(sess)
	}
}

// callTimeout bounds one tools/call of act: the action's timeout (its block's, else its server's), else the host's
// call timeout, else DefaultTimeout.
func (i *instance) callTimeout(act *Action) time.Duration {
	switch {
	case act.Timeout > 0:
		return act.Timeout
	case i.limits.CallTimeout > 0:
		return i.limits.CallTimeout
	}
	return DefaultTimeout
}

// connectTimeout bounds the start and handshake of act's server: the server block's timeout, else the host's call
// timeout, else DefaultTimeout.
func (i *instance) connectTimeout(act *Action) time.Duration {
	switch {
	case act.Server.Timeout > 0:
		return act.Server.Timeout
	case i.limits.CallTimeout > 0:
		return i.limits.CallTimeout
	}
	return DefaultTimeout
}

func (i *instance) teardownTimeout() time.Duration {
	if i.limits.TeardownTimeout > 0 {
		return i.limits.TeardownTimeout
	}
	return DefaultTeardownTimeout
}

// Invoke calls the action's tool with the call's arguments, bounded by the action's timeout (its block's, else its
// server's, else Limits.CallTimeout, else 30s) and ctx.
//
// A request that may have reached the server is sent again only for an idempotent or read-only action
// (call.Idempotent). A connection found lost before the request was written (no HTTP connection was made; a
// streamable HTTP server answered 404 for a session it no longer knows; the stdio server and its process group
// had exited before the call) is re-established once and the call sent. A
// connection lost after that is re-established for the next call, and this call's result is a recoverable
// unavailable error saying the outcome is unknown (runtime.LostReply), unless the action may be sent again, in
// which case it is. Losing the connection a second time within one call is unrecoverable.
//
// An isError result is a recoverable tool_error; a JSON-RPC error answer is recoverable too (invalid_arguments
// for invalid params, tool_error otherwise), and so is an HTTP status ≥ 400 from a remote server (rate_limited
// for 429, with Retry-After, unavailable for 5xx, invalid_request otherwise). A reply that cannot be read is a
// recoverable malformed_response, and the call's deadline a recoverable timeout, both with the outcome unknown.
//
// With an Authorizer, each request to a remote server carries its bearer (unless the block's headers set
// Authorization); a 401, or a 403 insufficient_scope, is handed to it and the request sent once more with the new
// token, at most mcpauth.MaxAuthorizations times per call. An authorization it does not give is a recoverable
// authorization_required (access_denied when refused, or past the bound), never remembered.
func (i *instance) Invoke(ctx context.Context, a runtime.Action, call *runtime.Call) (*runtime.Result, error) {
	act, err := action(a)
	if err != nil {
		return nil, err
	}
	st := &callState{} // one allocation for the first attempt's probe and the progress token
	req := mcp.CallToolRequest{}
	req.Params.Name = act.ToolName
	req.Params.Arguments = call.Args
	if call.ID != "" {
		st.meta.ProgressToken = call.ID
		req.Params.Meta = &st.meta
		i.track(call.ID, progressTarget{ctx: ctx, callID: call.ID, action: call.Action})
		defer i.untrack(call.ID)
	}
	deadline := time.Now().Add(i.callTimeout(act))
	var budget *authBudget
	if i.auth != nil && act.Server.Transport != TransportStdio {
		budget = &authBudget{callID: call.ID, values: call.Values, call: ctx}
	}
	for attempt := 1; ; attempt++ {
		p := &st.probe
		if attempt > 1 {
			p = &probe{}
		}
		o, err := i.attempt(ctx, deadline, act, call.Values, req, p, budget)
		if err != nil {
			return nil, err
		}
		if o.err == nil {
			out := convert(o.res, i.limits.ResponseBytes)
			out.Attempts = attempt
			return out, nil
		}
		if e := i.callError(ctx, o.timedOut, act, o.err, p); e != nil {
			var re *runtime.Error
			if attempt == 1 && errors.As(e, &re) && re.Status == http.StatusUnauthorized && re.Kind == runtime.KindInvalidRequest {
				// Refused before it ran: connect anew, which asks the auth provider for its token once more.
				i.drop(act, o.sess)
				i.logger.Warn("mcp: the server answered 401; asking for the token again", "server", act.Key)
				continue
			}
			return nil, e
		}
		// The connection is lost.
		sess := o.sess
		i.drop(act, sess)
		// Provably unsent: no HTTP connection was made; the server answered 404 for a session it no longer knows
		// (it ran nothing); for stdio: the server had exited before the call.
		unsent := !p.written() || errors.Is(o.err, transport.ErrSessionTerminated)
		if act.Server.Transport == TransportStdio {
			unsent = o.exited && errors.Is(o.err, transport.ErrTransportClosed)
		}
		if !unsent && !call.Idempotent {
			i.logger.Warn("mcp: server connection lost with a call in flight; not sending it again",
				"server", act.Key, "tool", act.ToolName, "error", o.err)
			return nil, runtime.LostReply(runtime.KindUnavailable,
				"mcp: the connection to the server of tool %s was lost before its reply", act.ToolName)
		}
		if attempt == 2 {
			return nil, runtime.Unrecoverable(sess.failure(fmt.Sprintf("mcp: server %s lost twice", act.Key), o.err))
		}
		i.logger.Warn("mcp: server connection lost; reconnecting", "server", act.Key, "error", o.err, "sent", !unsent)
	}
}

// callState is what one tools/call allocates once: the progress token's Meta and the first attempt's probe.
type callState struct {
	meta  mcp.Meta
	probe probe
}

// sent is one attempt of a tools/call: the session it went to, whether that session's server had exited before
// it (stdio), and mcp-go's answer; timedOut says the call's deadline passed while ctx had not ended.
type sent struct {
	sess     *session
	exited   bool
	res      *mcp.CallToolResult
	err      error
	timedOut bool
}

// attempt sends req once, on the session of act's server (connecting first when there is none), bounded by ctx
// and the call's deadline; p is the attempt's probe, which also ends it when the session's stream carries an
// unreadable reply or is lost. The error is that of getting a session; the call's own is in the sent.
func (i *instance) attempt(ctx context.Context, deadline time.Time, act *Action, values interp.Resolver,
	req mcp.CallToolRequest, p *probe, budget *authBudget) (sent, error) {
	actx, cancel := context.WithDeadline(ctx, deadline) // one context per attempt: the session's waits end it too
	defer cancel()
	sess, err := i.session(actx, act, values, budget)
	if err != nil {
		if ctx.Err() == nil && actx.Err() != nil {
			return sent{}, runtime.Errorf(runtime.KindTimeout, "mcp: no connection to the server before the call's deadline")
		}
		return sent{}, err
	}
	o := sent{sess: sess, exited: sess.exited()}
	sess.wait(p, cancel)
	if sess.lost.Load() { // the stream ended before the call registered: nothing is sent
		p.end(errStreamLost, cancel)
	}
	cctx := actx
	if act.Server.Transport != TransportStdio { // only HTTP requests feed a probe
		p.call = actx
		cctx = withBudget(withProbe(actx, p), budget)
	}
	o.res, o.err = sess.client.CallTool(cctx, req)
	sess.unwait(p)
	o.timedOut = o.err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded)
	return o, nil
}

// callError classifies a failed tools/call, nil when the connection is lost; timedOut says the call's deadline
// passed. p is the call's probe.
func (i *instance) callError(ctx context.Context, timedOut bool, act *Action, err error, p *probe) error {
	if ctx.Err() != nil {
		return callContextError(ctx, act)
	}
	if timedOut {
		return runtime.LostReply(runtime.KindTimeout, "mcp: tool %s did not answer within %s", act.ToolName, i.callTimeout(act))
	}
	if e := authFailure(act.Key, err); e != nil {
		return e // refused before it ran: the server did not take the request
	}
	if sseReplyTimeout(err) {
		// mcp-go's SSE client gave up on its own timer (it is set to at least the deadline, so this happens only
		// when both end together): the reply is late, the connection is not lost.
		return runtime.LostReply(runtime.KindTimeout, "mcp: tool %s did not answer in time", act.ToolName)
	}
	retryAfter, malformed := p.answer()
	if e := statusError(act, err); e != nil {
		if e.Kind == runtime.KindRateLimited || e.Status == http.StatusServiceUnavailable {
			e.RetryAfter = retryAfter
		}
		return e
	}
	var unauthorized *transport.AuthorizationRequiredError
	if errors.As(err, &unauthorized) {
		e := runtime.Errorf(runtime.KindInvalidRequest, "mcp: tool %s: the server answered HTTP 401 Unauthorized",
			act.ToolName)
		e.Status = http.StatusUnauthorized
		if u := unauthorized.ResourceMetadataURL; u != "" {
			// For a host that runs the OAuth flow the server asks for (RFC 9728).
			e.Message += "; the server's resource metadata: " + u
		}
		return e
	}
	// A reply cut short within a whole HTTP exchange (the body ended cleanly, mid-JSON) is malformed too.
	if malformed || isMalformed(err) || (errors.Is(err, io.ErrUnexpectedEOF) && p.wholeReply()) {
		return runtime.LostReply(runtime.KindMalformedResponse, "mcp: the reply of tool %s is not valid JSON-RPC", act.ToolName)
	}
	var terr *transport.Error
	if !errors.As(err, &terr) {
		return rpcError(act, err)
	}
	return nil
}

// sseReplyTimeout reports the expiry of mcp-go's SSE response timer, which it gives only as a message.
func sseReplyTimeout(err error) bool {
	return strings.Contains(err.Error(), "timeout waiting for SSE response")
}

// isMalformed reports a reply that is not JSON, or not the JSON-RPC response or tool result it should be.
func isMalformed(err error) bool {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	return errors.As(err, &syntax) || errors.As(err, &typ)
}

// callContextError reports the end of the caller's context: its deadline is a recoverable timeout, whose outcome
// is unknown.
func callContextError(ctx context.Context, act *Action) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return runtime.LostReply(runtime.KindTimeout, "mcp: tool %s did not answer before the call's deadline", act.ToolName)
	}
	return fmt.Errorf("mcp: tool %s: %w", act.ToolName, ctx.Err())
}

// rpcError classifies a JSON-RPC error answer: the server is alive and refused or failed the call.
func rpcError(act *Action, err error) error {
	if errors.Is(err, mcp.ErrInvalidParams) {
		return runtime.Errorf(runtime.KindInvalidArguments, "mcp: tool %s: %v", act.ToolName, err)
	}
	return runtime.Errorf(runtime.KindToolError, "mcp: tool %s: %v", act.ToolName, err)
}

// httpStatus finds the HTTP status mcp-go's SSE and streamable HTTP transports report for an answer that is not
// 200 or 202: they give it only in the message ("request failed with status 503: body").
var httpStatus = regexp.MustCompile(`request failed with status (\d{3}): ?`)

// statusError classifies an HTTP status ≥ 400 answer to a call as recoverable (SPEC §7.1): the server is reachable
// and said no, which is no lost connection. 429 is rate_limited, 5xx unavailable, other 4xx invalid_request; the
// message quotes a bounded excerpt of the body. nil when err carries no such status.
func statusError(act *Action, err error) *runtime.Error {
	msg := err.Error()
	m := httpStatus.FindStringSubmatchIndex(msg)
	if m == nil {
		return nil
	}
	code, _ := strconv.Atoi(msg[m[2]:m[3]])
	if code < 400 {
		return nil
	}
	text := fmt.Sprintf("mcp: tool %s: the server answered HTTP %d %s", act.ToolName, code, http.StatusText(code))
	if x := httpspec.Excerpt([]byte(msg[m[1]:]), httpspec.ExcerptLimit); x != "" {
		text += ": " + x
	}
	kind := runtime.KindInvalidRequest
	switch {
	case code == http.StatusTooManyRequests:
		kind = runtime.KindRateLimited
	case code >= 500:
		kind = runtime.KindUnavailable
	}
	e := runtime.Errorf(kind, "%s", text)
	e.Status = code
	return e
}

func (i *instance) track(token string, t progressTarget) {
	i.progressMu.Lock()
	i.progress[token] = t
	i.progressMu.Unlock()
}

// soleCall returns the context of the only call in flight on the task's servers; nil when none or several.
func (i *instance) soleCall() context.Context {
	i.progressMu.Lock()
	defer i.progressMu.Unlock()
	if len(i.progress) != 1 {
		return nil
	}
	for _, t := range i.progress {
		return t.ctx
	}
	return nil
}

func (i *instance) untrack(token string) {
	i.progressMu.Lock()
	delete(i.progress, token)
	i.progressMu.Unlock()
}

// notify forwards a progress notification of server as a tool.progress fact of the call it belongs to, a log
// message as a tool.log fact, and a change of its tools as an mcp.tools.changed fact.
func (i *instance) notify(server string, n mcp.JSONRPCNotification) {
	if n.Method == string(mcp.MethodNotificationToolsListChanged) {
		i.observe(i.life, facts.MCPToolsChanged, map[string]any{"server": server})
		return
	}
	if n.Method == string(mcp.MethodNotificationMessage) {
		i.log(n.Params.AdditionalFields)
		return
	}
	if n.Method != string(mcp.MethodNotificationProgress) {
		return
	}
	p := n.Params.AdditionalFields
	token, _ := p["progressToken"].(string)
	i.progressMu.Lock()
	t, ok := i.progress[token]
	i.progressMu.Unlock()
	if !ok {
		return
	}
	data := map[string]any{"call_id": t.callID, "action": t.action, "progress": p["progress"]}
	for _, k := range []string{"total", "message"} {
		if v, ok := p[k]; ok {
			data[k] = v
		}
	}
	i.observe(t.ctx, facts.ToolProgress, data)
}

// log reports a server's log message as a tool.log fact: of the call running on the task's servers when there is
// exactly one (a log message names no request), else of the task.
func (i *instance) log(p map[string]any) {
	data := map[string]any{"level": p["level"], "data": p["data"]}
	if logger, ok := p["logger"]; ok {
		data["logger"] = logger
	}
	ctx := i.life
	i.progressMu.Lock()
	if len(i.progress) == 1 {
		for _, t := range i.progress {
			ctx, data["call_id"], data["action"] = t.ctx, t.callID, t.action
		}
	}
	i.progressMu.Unlock()
	i.observe(ctx, facts.ToolLog, data)
}

// Teardown closes every session of the task, in parallel, within ctx (else the host's teardown bound); stdio
// servers are asked to exit (stdin closed) and their process groups are killed when they have not exited by half
// of the remaining time. It runs once; later calls return the first result.
func (i *instance) Teardown(ctx context.Context) error {
	i.once.Do(func() {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, i.teardownTimeout())
			defer cancel()
		}
		i.mu.Lock()
		i.closed = true
		var sessions []*session
		for _, s := range i.servers {
			if s.sess != nil {
				sessions = append(sessions, s.sess)
				s.sess = nil
			}
		}
		i.mu.Unlock()
		i.cancel() // ends connects in flight (killing a stdio server still in its handshake) and SSE streams
		connected := make(chan struct{})
		go func() { i.connecting.Wait(); close(connected) }()
		var waitErr error
		select {
		case <-connected:
		case <-ctx.Done():
			waitErr = fmt.Errorf("waiting for a server's start to end: %w", ctx.Err())
		}

		errs := make([]error, len(sessions))
		var wg sync.WaitGroup
		for n, sess := range sessions {
			wg.Go(func() { errs[n] = sess.close(ctx) })
		}
		wg.Wait()
		if err := errors.Join(append(errs, waitErr)...); err != nil {
			i.teardownErr = fmt.Errorf("closing the servers: %w", err)
		}
	})
	return i.teardownErr
}

var _ runtime.Instance = (*instance)(nil)
