// Package mcpserve serves the functions of a tool manifest as an MCP server (github.com/mark3labs/mcp-go), over
// stdio or streamable HTTP: each function (Tool.Functions) is an MCP tool whose input schema is the function's
// parameters, and each tools/call runs through Task.InvokeFunction of one task.
//
// A recoverable failure of a call (SPEC §8) is an MCP result with isError set and Result.Text() as its text; an
// unrecoverable one is a JSON-RPC error whose message is the task's error text (secrets masked by the task), and the
// task is then over: later calls are refused with a JSON-RPC error without running, and a task New started is
// closed. `tool serve-mcp` is this package over stdio; a host mounts Handler on its own HTTP server for streamable
// HTTP.
package mcpserve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/facts"
	"github.com/commonagents-go/tool/runtime"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Version is the server version announced in the MCP handshake.
const Version = "1.0.0"

// Server is one task's functions served over MCP. It is safe for concurrent use.
type Server struct {
	mcp   *server.MCPServer
	calls *caller
	tools *served
	stdio *StdioRelay // nil: the stdio client is asked nothing
}

// caller runs the tools/call requests of one task; after an unrecoverable error it refuses them.
type caller struct {
	task  *tool.Task
	owned bool // the task was started by mcpserve: it is closed after an unrecoverable error and at Close
	// over holds the first unrecoverable error's text once the task is over.
	over atomic.Pointer[string]
	// running counts the calls on the caller, added before it is handed to a call: a caller replaced by a
	// SessionHandler's Update is closed once they have ended.
	running sync.WaitGroup
	// relay reaches the client of the calls' session (ElicitURL); nil: none.
	relay *relay
}

// closeBound bounds closing an owned task after an unrecoverable error.
const closeBound = 15 * time.Second

// New starts a task of t with cfg and returns a server of the functions cfg.Capability exposes. Close ends the
// task. It returns NewTask's error (bindings that do not validate, for instance).
func New(ctx context.Context, t *tool.Tool, cfg tool.TaskConfig) (*Server, error) {
	task, err := t.NewTask(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s := ForTask(task, cfg.Capability)
	s.calls.owned = true
	return s, nil
}

// ForTask returns a server of the functions c exposes, calling them through task, which must have been started
// with the same capability. The caller keeps the task: Close does not close it.
func ForTask(task *tool.Task, c tool.Capability) *Server {
	return ForStdioTask(task, c, nil)
}

// ForStdioTask is ForTask for a task started with r as its relay (tool.TaskConfig.MCPRelay): served with
// ServeStdio, the requests the task's MCP servers make during a call (sampling/createMessage, elicitation/create,
// roots/list) reach the stdio client as they came, and its answers go back as it gave them, as a
// SessionHandler's do; ElicitURL reaches the client too. r nil is ForTask.
func ForStdioTask(task *tool.Task, c tool.Capability, r *StdioRelay) *Server {
	s := &Server{calls: &caller{task: task}, stdio: r}
	if r != nil {
		s.calls.relay = &r.r
	}
	s.mcp, s.tools = newMCPServer(task.Tool(), c, false, func(ctx context.Context) (*caller, error) {
		if r != nil {
			r.declare(declared(ctx))
		}
		s.calls.running.Add(1)
		return s.calls, nil
	})
	return s
}

// newMCPServer returns an mcp-go server of the functions of t that c exposes, each named by its function name or,
// with actionNames, by its action name, and the names it serves; each call runs on the caller that calls returns
// for its request, counted among that caller's running calls until it ends.
func newMCPServer(t *tool.Tool, c tool.Capability, actionNames bool, calls func(context.Context) (*caller, error),
	opts ...server.ServerOption) (*server.MCPServer, *served) {
	srv := server.NewMCPServer(t.Name(), Version, append([]server.ServerOption{server.WithToolCapabilities(false),
		server.WithLogging()}, opts...)...)
	tools, names := serverTools(t, c, actionNames, calls)
	srv.AddTools(tools...)
	return srv, newServed(names)
}

// serverTools returns the mcp-go tools of the functions of t that c exposes, and their names.
func serverTools(t *tool.Tool, c tool.Capability, actionNames bool,
	calls func(context.Context) (*caller, error)) ([]server.ServerTool, []string) {
	hints := map[string]tool.CatalogEntry{}
	for _, e := range t.Catalog(c) {
		hints[e.Function] = e
	}
	var tools []server.ServerTool
	var names []string
	for _, f := range t.Functions(c) {
		name := f.Name
		if actionNames {
			name = f.Action
		}
		names = append(names, name)
		def, ok := sourced(name, f.Source)
		if !ok {
			def = mcp.NewToolWithRawSchema(name, f.Description, f.Parameters)
		}
		if e, has := hints[f.Name]; has && !ok {
			def.Annotations = mcp.ToolAnnotation{Title: e.Title, ReadOnlyHint: &e.IsReadOnly,
				DestructiveHint: &e.IsDestructive, IdempotentHint: &e.IsIdempotent, OpenWorldHint: &e.IsOpenWorld}
			def.Title, def.RawOutputSchema = e.Title, e.OutputSchema
		}
		function := f.Name
		tools = append(tools, server.ServerTool{Tool: def,
			Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				cl, err := calls(ctx)
				if err != nil {
					return nil, err
				}
				defer cl.running.Done()
				return cl.call(ctx, function, req)
			}})
	}
	return tools, names
}

// sourced is the tool definition a discovered function's source gave (tool.Function.Source), served under name
// with every field mcp-go carries as received and both schemas byte for byte; false when there is none.
func sourced(name string, src json.RawMessage) (mcp.Tool, bool) {
	if len(src) == 0 {
		return mcp.Tool{}, false
	}
	var d struct {
		Title        string             `json:"title"`
		Description  string             `json:"description"`
		InputSchema  json.RawMessage    `json:"inputSchema"`
		OutputSchema json.RawMessage    `json:"outputSchema"`
		Annotations  mcp.ToolAnnotation `json:"annotations"`
		Icons        []mcp.Icon         `json:"icons"`
		Meta         *mcp.Meta          `json:"_meta"`
		Execution    *mcp.ToolExecution `json:"execution"`
	}
	if json.Unmarshal(src, &d) != nil || len(d.InputSchema) == 0 {
		return mcp.Tool{}, false
	}
	def := mcp.Tool{Name: name, Title: d.Title, Description: d.Description, RawInputSchema: d.InputSchema,
		Annotations: d.Annotations, Icons: d.Icons, Meta: d.Meta, Execution: d.Execution}
	if len(d.OutputSchema) > 0 && string(d.OutputSchema) != "null" {
		def.RawOutputSchema = d.OutputSchema
	}
	return def, true
}

// MCPServer returns the underlying mcp-go server, to serve it over another transport. A transport of the host's,
// or an in-process client, does not pass mcpserve's screen of unknown tools: a call of a tool not served gets
// mcp-go's own -32602, without the served names in its data (docs/conformance.md).
func (s *Server) MCPServer() *server.MCPServer { return s.mcp }

// Task returns the task the calls run in.
func (s *Server) Task() *tool.Task { return s.calls.task }

// DefaultWorkers is how many tools/call requests ServeStdio runs at once unless an option says otherwise (mcp-go's
// own default is 5): enough for the parallel calls an agent makes in one turn, which a task runs in parallel when
// they are read-only and concurrency-safe (SPEC §11); a write call waits for the others in the task, not in the
// server. It matches the idle connections per host the default HTTP client of a Tool keeps (32).
const DefaultWorkers = 32

// DefaultQueue is how many tools/call requests ServeStdio holds while every worker is busy (mcp-go's default).
const DefaultQueue = 100

// ServeStdio serves MCP over line-delimited JSON-RPC on in and out until in ends (nil) or ctx is done (its error).
// Calls run on DefaultWorkers workers, with up to DefaultQueue more waiting; opts (server.WithWorkerPoolSize,
// server.WithQueueSize; at most 100 workers) come after these defaults and override them.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer, opts ...server.StdioOption) error {
	stdio := server.NewStdioServer(s.mcp)
	stream := &stdioStream{w: out}
	var rs *relays
	if s.stdio != nil {
		rs = &s.stdio.rs
		defer s.stdio.end()
	}
	for _, opt := range append([]server.StdioOption{server.WithWorkerPoolSize(DefaultWorkers),
		server.WithQueueSize(DefaultQueue), server.WithStdioContextFunc(func(ctx context.Context) context.Context {
			return context.WithValue(ctx, streamKey{}, stream)
		})}, opts...) {
		opt(stdio)
	}
	err := stdio.Listen(ctx, &screened{src: bufio.NewReader(in), sv: s.tools, out: stream, rs: rs}, stream)
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// Handler returns an http.Handler serving MCP over streamable HTTP, to mount at the path clients use.
func (s *Server) Handler(opts ...server.StreamableHTTPOption) http.Handler {
	return ordered(server.NewStreamableHTTPServer(s.mcp, opts...), s.tools, nil)
}

// Close ends the task when New started it, tearing down what its calls started, within ctx.
func (s *Server) Close(ctx context.Context) error {
	if !s.calls.owned {
		return nil
	}
	return s.calls.task.Close(ctx)
}

// call runs one tools/call of function through the task; after an unrecoverable error it refuses.
func (c *caller) call(ctx context.Context, function string, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if msg := c.over.Load(); msg != nil {
		return nil, fmt.Errorf("the task is over after an unrecoverable error: %s", *msg)
	}
	args := []byte(req.Params.RawArguments)
	if len(args) == 0 && req.Params.Arguments != nil {
		var err error
		if args, err = json.Marshal(req.Params.Arguments); err != nil {
			return mcp.NewToolResultError("invalid_arguments: arguments must be a JSON object"), nil
		}
	}
	ctx, st := withCallState(ctx, c.relay)
	res, err := c.task.InvokeFunction(forwarding(ctx, req), function, args)
	if err == nil {
		if required := st.urlRequired(res); required != nil {
			return nil, required // -32042: the client did not take the URL elicitations the call made
		}
	}
	if err != nil {
		if errors.Is(err, tool.ErrUnrecoverable) {
			c.end(ctx, err)
		}
		// The task's error text: secrets are masked by the task; a Go error chain is not passed on.
		return nil, errors.New(err.Error())
	}
	return Result(res), nil
}

// forwarding returns ctx with a call observer that sends the call's progress (when the client asked for it with a
// progressToken) and the log messages of the servers behind it to the client, as MCP notifications; the log level
// the client set applies.
func forwarding(ctx context.Context, req mcp.CallToolRequest) context.Context {
	srv := server.ServerFromContext(ctx)
	if srv == nil {
		return ctx
	}
	var token mcp.ProgressToken
	if req.Params.Meta != nil {
		token = req.Params.Meta.ProgressToken
	}
	return tool.ContextWithCallObserver(ctx, tool.ObserverFunc(func(_ context.Context, f tool.Fact) {
		switch f.Name {
		case facts.ToolProgress:
			if token == nil {
				return
			}
			params := map[string]any{"progressToken": token, "progress": f.Data["progress"]}
			for _, k := range []string{"total", "message"} {
				if v, ok := f.Data[k]; ok {
					params[k] = v
				}
			}
			notify(ctx, srv, notification(string(mcp.MethodNotificationProgress), params))
		case facts.ToolLog:
			level, _ := f.Data["level"].(string)
			if !logWanted(ctx, mcp.LoggingLevel(level)) {
				return
			}
			logger, _ := f.Data["logger"].(string)
			notify(ctx, srv, notification(string(mcp.MethodNotificationMessage),
				map[string]any{"level": level, "logger": logger, "data": f.Data["data"]}))
		}
	}))
}

// end marks the task over after err, and closes it when mcpserve started it (bounded, not by the call's ctx).
func (c *caller) end(ctx context.Context, err error) {
	msg := err.Error()
	if !c.over.CompareAndSwap(nil, &msg) || !c.owned {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeBound)
	defer cancel()
	_ = c.task.Close(cctx) // Close reports it again to the host
}

// Result converts a call's result into an MCP tool result. An error is isError with the result's Text(): the kind,
// the message and the hint (the missing fields' schemas, the accepted arguments) the LLM can act on. A result with
// content blocks (an mcp action's) serves them as they came, in order, with an object output as structured content;
// otherwise an object output is structured content plus its JSON as text, a string output its text, anything else
// its JSON.
func Result(res *tool.Result) *mcp.CallToolResult {
	if res.IsError {
		return mcp.NewToolResultError(res.Text())
	}
	if len(res.Content) > 0 {
		out := &mcp.CallToolResult{Content: blocks(res.Content)}
		if _, ok := res.Output.(map[string]any); ok && !res.Omitted {
			out.StructuredContent = res.OutputJSON
		}
		return out
	}
	switch out := res.Output.(type) {
	case string:
		return mcp.NewToolResultText(out)
	case map[string]any:
		return &mcp.CallToolResult{
			Content:           []mcp.Content{mcp.NewTextContent(string(res.OutputJSON))},
			StructuredContent: res.OutputJSON,
		}
	}
	return mcp.NewToolResultText(string(res.OutputJSON))
}

// blocks converts content blocks into mcp-go's through their JSON, which keeps annotations and _meta.
func blocks(cs []runtime.Content) []mcp.Content {
	out := make([]mcp.Content, 0, len(cs))
	for _, c := range cs {
		raw, err := json.Marshal(c)
		var b mcp.Content
		if err == nil {
			b, err = mcp.UnmarshalContent(raw)
		}
		if err != nil {
			b = mcp.NewTextContent(fmt.Sprintf("(a %s block that cannot be served: %v)", c.Type, err))
		}
		out = append(out, b)
	}
	return out
}
