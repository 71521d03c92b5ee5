package main

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/mcpserve"
	"github.com/commonagents-go/tool/mcpserve/resource"
	"github.com/mark3labs/mcp-go/mcp"
)

// httpServe holds serve-mcp's streamable HTTP flags.
type httpServe struct {
	addr, tokenEnv string
	insecure       bool
	actionNames    bool
	maxSessions    int
	maxProcesses   int
	idle           time.Duration
	door           *door
	upstream       *upstreamFlags
}

// defaultMaxProcesses bounds the processes of a session's task unless --max-processes says otherwise.
const defaultMaxProcesses = 16

func httpFlags(fs *flag.FlagSet) *httpServe {
	h := &httpServe{}
	fs.StringVar(&h.addr, "http", "", "serve streamable HTTP on `ADDR` (host:port) instead of stdio")
	fs.StringVar(&h.tokenEnv, "token-env", "", "require the bearer token held by the environment variable `NAME`")
	fs.BoolVar(&h.insecure, "insecure", false, "allow a non-loopback --http address without a token")
	fs.BoolVar(&h.actionNames, "action-names", false, "name the served tools by action, not function (a gateway "+
		"that keeps the upstream's tool names)")
	fs.IntVar(&h.maxSessions, "max-sessions", mcpserve.DefaultMaxSessions, "live MCP sessions at most (`N`)")
	fs.IntVar(&h.maxProcesses, "max-processes", defaultMaxProcesses, "processes each session's task may have "+
		"running at once: stdio MCP servers, exec programs and servers (`N`; 0: no bound)")
	fs.DurationVar(&h.idle, "idle-timeout", mcpserve.DefaultIdleTimeout, "end a session idle this long (`D`)")
	h.door = doorFlags(fs)
	h.upstream = upstreamAuthFlags(fs)
	return h
}

// serveHTTP serves the manifest over streamable HTTP with a task per session until ctx ends (a signal).
func serveHTTP(ctx context.Context, fs *flag.FlagSet, stderr io.Writer, hf *httpServe, file string,
	opts []tool.Option, bindings, taskContext map[string]any) int {
	token := ""
	if hf.tokenEnv != "" {
		if token = os.Getenv(hf.tokenEnv); token == "" {
			return usageError(fs, "--token-env %s: the variable is empty or not set", hf.tokenEnv)
		}
	}
	if hf.maxSessions < 1 || hf.idle <= 0 || hf.maxProcesses < 0 {
		return usageError(fs, "--max-sessions and --idle-timeout must be positive, --max-processes 0 or more")
	}
	door, err := hf.door.server(tool.SystemClock{})
	if err != nil {
		return usageError(fs, "%v", err)
	}
	if door != nil && token != "" {
		return usageError(fs, "--token-env and --resource-url exclude each other: one door")
	}
	conn, err := hf.upstream.connector(ctx, hf.door.resourceURL, door, hf.door.scopeList(), hf.door.allowLoopback,
		tool.SystemClock{}, stderr)
	if errors.Is(err, errUpstreamStore) {
		fmt.Fprintf(stderr, "tool serve-mcp: %v\n", err)
		return exitProblem
	}
	if err != nil {
		return usageError(fs, "%v", err)
	}
	defer conn.close()
	host, _, err := net.SplitHostPort(hf.addr)
	if err != nil {
		return usageError(fs, "--http %s: %v", hf.addr, err)
	}
	if token == "" && door == nil && !hf.insecure && !loopback(host) {
		return usageError(fs, "--http %s is not a loopback address: give --token-env or --resource-url, or "+
			"--insecure to serve it without a token", hf.addr)
	}
	changed := make(chan struct{}, 1) // an upstream's tools changed (facts.MCPToolsChanged): discover again
	opts = append(opts[:len(opts):len(opts)], tool.WithLimits(tool.Limits{MaxProcesses: hf.maxProcesses}),
		tool.WithObserver(tool.ObserverFunc(func(_ context.Context, f tool.Fact) {
			if f.Name == facts.MCPToolsChanged {
				select {
				case changed <- struct{}{}:
				default: // one rediscovery pending covers every change before it
				}
			}
		})))
	t, c, code := loadChecked(ctx, fs, stderr, file, opts, bindings, "")
	if t == nil {
		return code
	}
	printWarnings(stderr, file, t) // a server that could not be listed serves none of its tools: say why
	starter := func(t *tool.Tool) mcpserve.StartFunc {
		return func(ctx context.Context) (*tool.Task, error) {
			// Behind the door, the task acts for the user the session belongs to: the upstream grants of that
			// user (TaskConfig.Subject), never the client's own token, which goes no further than the door. The
			// upstream servers' requests reach the session's client as they came (mcpserve.SessionRelay).
			cfg := tool.TaskConfig{Capability: c, Context: taskContext, MCPRelay: mcpserve.SessionRelay(ctx)}
			if u, ok := resource.UserFrom(ctx); ok {
				cfg.Subject = u.Key()
			}
			if conn != nil { // --upstream-auth: the user's own grants, asked for through their client
				cfg.MCPAuthorizer = conn.client
			}
			task, err := t.NewTask(ctx, cfg)
			return task, contextProblems(err)
		}
	}
	start := starter(t)
	cfg := mcpserve.SessionConfig{Capability: c, MaxSessions: hf.maxSessions, IdleTimeout: hf.idle,
		ActionNames: hf.actionNames}
	switch {
	case door != nil: // a user's sessions are theirs whatever token of theirs comes, a refreshed one too
		cfg.Owner, cfg.MaxSessionsPerOwner = userOf, hf.door.perUser
	case token != "":
		cfg.Owner = func(r *http.Request) string { return digest(r.Header.Get("Authorization")) }
	}
	sessions := mcpserve.Handler(t, start, cfg)
	if conn != nil {
		conn.notify = func(session, elicitation string) {
			_ = sessions.MCPServer().SendNotificationToSpecificClient(session,
				string(mcp.MethodNotificationElicitationComplete), map[string]any{"elicitationId": elicitation})
		}
	}
	wctx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		rediscover(wctx, stderr, t, changed, func(t *tool.Tool) { sessions.Update(t, starter(t)) })
	}()
	defer func() { stopWatch(); <-watched }()
	mux := http.NewServeMux()
	if door != nil {
		guard(mux, door, sessions)
		if conn != nil {
			conn.routes(mux)
		}
	} else {
		mux.Handle("/mcp", bearer(token, sessions))
	}
	ln, err := net.Listen("tcp", hf.addr)
	if err != nil {
		fmt.Fprintf(stderr, "tool serve-mcp: %v\n", err)
		return exitProblem
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second}
	fmt.Fprintf(stderr, "tool serve-mcp: serving MCP on http://%s/mcp\n", ln.Addr())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-served:
	}
	// Calls in flight end, listening streams are closed, then the sessions' tasks.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), serveTeardown)
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- sessions.Close(cctx) }()
	if err := srv.Shutdown(cctx); err != nil {
		fmt.Fprintf(stderr, "tool serve-mcp: %v\n", err)
	}
	if err := <-closed; err != nil {
		fmt.Fprintf(stderr, "tool serve-mcp: %v\n", err)
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "tool serve-mcp: %v\n", serveErr)
		return exitProblem
	}
	return exitOK
}

// loopback reports whether host names only this machine; "" (every interface) does not.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func digest(s string) string {
	d := sha256.Sum256([]byte(s))
	return hex.EncodeToString(d[:])
}

// bearer admits only requests whose Authorization is "Bearer token", comparing digests in constant time; token ""
// admits every request.
func bearer(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	want := sha256.Sum256([]byte("Bearer " + token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := sha256.Sum256([]byte(r.Header.Get("Authorization")))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="tool serve-mcp"`)
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// rediscover loads the manifest again after each change an upstream announces (a signal on changed), until ctx
// ends, and hands each new Tool to update; a load that fails keeps the Tool served, and says why on stderr.
func rediscover(ctx context.Context, stderr io.Writer, t *tool.Tool, changed <-chan struct{}, update func(*tool.Tool)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
		lctx, cancel := context.WithTimeout(ctx, rediscoverBound)
		next, err := t.Rediscover(lctx)
		cancel()
		if err != nil {
			fmt.Fprintf(stderr, "tool serve-mcp: an upstream's tools changed; discovering them again: %v\n", err)
			continue
		}
		t = next
		update(t)
	}
}

// rediscoverBound bounds loading the manifest again after an upstream's tools changed.
const rediscoverBound = 2 * time.Minute
