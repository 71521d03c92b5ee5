package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/mcpserve"
	"github.com/mark3labs/mcp-go/server"
)

var serveMCPCommand = command{
	name:     "serve-mcp",
	synopsis: "FILE [--settings FILE] [--binding name=value ...] [--workers N] [--http-conns N] [--http ADDR ...]",
	summary:  "serve a manifest's functions as an MCP server over stdio or streamable HTTP",
	detail: `Serve-mcp loads the manifest, starts one task with the given bindings and
serves the task's functions as MCP tools over stdio (line-delimited JSON-RPC on
stdin and stdout) until stdin ends or the process is interrupted; then it
closes the task, tearing down what its calls started. Each tool's input schema
is the function's parameters (as 'tool functions' prints them) and each
tools/call runs through Task.InvokeFunction. A recoverable failure is a result
with isError set whose text is the error object with its hint, as the LLM
reads it (Result.Text); for an unknown argument x of a function whose only
parameter is name:

    {"error":{"kind":"invalid_arguments","message":"unknown arguments \"x\"","hint":{"message":"accepted arguments: name"}}}

An unrecoverable one is a JSON-RPC error with the task's error text (secrets
masked), and every later call is refused with a JSON-RPC error: the task is
over.

Up to --workers calls run at once (default 32, at most 100; more wait in a
queue of 100): set it to the number of calls your MCP client makes in parallel.
The task runs read-only, concurrency-safe calls together and a write alone.
HTTP calls go through a client that keeps --http-conns idle connections per
host (default: --workers), with keep-alive and HTTP/2 over TLS.

With --http ADDR it serves MCP over streamable HTTP at http://ADDR/mcp
instead, with one task per MCP session: each session gets a task of its own
(its own allow list and backend sessions), closed when the client deletes the
session, after --idle-timeout without a request (default 30m), or at shutdown.
At --max-sessions live sessions (default 64) a new one is answered 503. The
processes a session's task starts (stdio MCP servers, exec programs and
servers) count against --max-processes (default 16; 0: no bound): a call that
would start one more fails with a recoverable error naming the limit. With
--token-env NAME every request must carry "Authorization: Bearer <token>",
the token being the value of the environment variable NAME (compared in
constant time, never logged), and a session answers only the token that made
it. An address that is not loopback is refused without a token unless
--insecure is given; for TLS, put a reverse proxy in front. SIGTERM or an
interrupt stops accepting, lets the calls in flight end and closes the tasks.
--action-names serves each tool under its action name instead of its function
name, and --discover turns the tools of a top-level mcp block into actions at
load: together they make a gateway that keeps an MCP server's tool names. The
upstream servers' sampling, elicitation and roots requests reach the client of
the call that caused them, over stdio as over HTTP.

Behind --resource-url, --upstream-auth calls OAuth-protected upstreams with
each user's own grants: a user who has none is sent a URL-mode elicitation (or
the call's -32042 error) of the gateway's link, which signs the browser in at
the door's issuer (--upstream-login-client-env) and completes at the callback
--resource-url/oauth/callback for that user and browser only (docs/security.md).

The exit code is 0 after a clean end of input (or shutdown), 1 when the manifest cannot be
loaded or the task cannot start, 2 for a command-line mistake. Diagnostics go
to stderr; stdout carries only MCP messages.`,
	run: runServeMCP,
}

// serveTeardown bounds closing the task when serving ends.
const serveTeardown = 15 * time.Second

func runServeMCP(ctx context.Context, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) int {
	bindings := bindingFlag(fs)
	taskContext := contextFlag(fs)
	settingsFile := fs.String("settings", "", "a YAML or JSON `FILE` mapping setting keys to values")
	workers := fs.Int("workers", mcpserve.DefaultWorkers, "how many calls run at once, 1 to 100 (`N`)")
	conns := fs.Int("http-conns", 0, "idle HTTP connections kept per host (`N`; default: --workers)")
	hf := httpFlags(fs)
	discoverClient := fs.String("discover-client-env", "", "list a protected upstream at load with the client "+
		"credentials grant of the client `NAME`_ID, NAME_SECRET at NAME_ISSUER (with --discover)")
	discover := fs.Bool("discover", false, "turn the tools of a top-level mcp block into actions at load "+
		"(starts or connects to its server)")
	pos, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(fs, "want one manifest file, got %d arguments", len(pos))
	}
	if *workers < 1 || *workers > 100 {
		return usageError(fs, "--workers %d: want 1 to 100", *workers)
	}
	if *conns < 0 {
		return usageError(fs, "--http-conns %d: want 0 or more", *conns)
	}
	if *conns == 0 {
		*conns = *workers
	}
	opts, err := settingsOption(*settingsFile)
	if err != nil {
		fmt.Fprintf(stderr, "tool serve-mcp: %v\n", err)
		return exitProblem
	}
	opts = append(opts, tool.WithHTTPClient(tool.NewHTTPClient(*conns)), tool.WithDiscovery(*discover))
	if *discoverClient != "" {
		if !*discover {
			return usageError(fs, "--discover-client-env needs --discover")
		}
		opt, err := discoverAuth(*discoverClient, hf.door.allowLoopback)
		if err != nil {
			return usageError(fs, "%v", err)
		}
		opts = append(opts, opt)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if hf.addr != "" {
		return serveHTTP(ctx, fs, stderr, hf, pos[0], opts, bindings, *taskContext)
	}
	t, c, code := loadChecked(ctx, fs, stderr, pos[0], opts, bindings, "")
	if t == nil {
		return code
	}
	printWarnings(stderr, pos[0], t) // a server that could not be listed serves none of its tools: say why
	// The upstream servers' requests reach the stdio client as they came, as over HTTP (mcpserve.StdioRelay).
	relay := mcpserve.NewStdioRelay()
	auth, err := localAuthorizer() // the local user's grants (tool auth), as invoke uses them
	if err != nil {
		fmt.Fprintf(stderr, "tool serve-mcp: the grants of 'tool auth': %v\n", err)
		return exitProblem
	}
	task, err := t.NewTask(ctx, tool.TaskConfig{Capability: c, Context: *taskContext, MCPRelay: relay, MCPAuthorizer: auth})
	if err != nil {
		fmt.Fprintf(stderr, "tool serve-mcp: %v\n", contextProblems(err))
		return exitProblem
	}
	serveErr := mcpserve.ForStdioTask(task, c, relay).ServeStdio(ctx, os.Stdin, stdout, server.WithWorkerPoolSize(*workers))
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), serveTeardown)
	defer cancel()
	if err := task.Close(cctx); err != nil {
		fmt.Fprintf(stderr, "tool serve-mcp: %v\n", err)
	}
	if serveErr != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "tool serve-mcp: %v\n", serveErr)
		return exitProblem
	}
	return exitOK
}
