// Package mcpserver is a real MCP server (mark3labs/mcp-go) for the tests of the mcp backend. The test binary is
// the server: TestMain links the name mcpserver to the test binary and, when run under that name, runs Main
// instead of the tests (os/exec's helper-process pattern), so the server is a separate process with no build step
// of its own.
//
// By default it serves over stdio. With -http ADDR or -sse ADDR it listens on ADDR (streamable HTTP or SSE) and
// prints "listening URL" on stdout once it accepts connections.
//
// Tools: echo, add, fail, slow, progress, crash, image, pid, env, plus unusable (a remote $ref in its schema) and
// dotted.name (a name that is no valid action name) for the expansion tests.
//
// The environment variable MCPSERVER_STARTS names a file the server appends one line to when it starts, so tests
// can count starts; MCPSERVER_FAIL_START makes it print that text to stderr and exit 1 before serving.
// MCPSERVER_STUBBORN names a file: the server starts a child process (in its process group) that writes its pid
// there, ignores SIGTERM, and keeps running after its input ends, as a badly behaved server would; with
// MCPSERVER_SETSID set too, that child leaves the process group (setsid).
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Main runs the server as the program it is: it reads its flags from os.Args and exits on failure.
func Main() {
	// A flag set of its own: the test binary's command line already holds the -test.* flags.
	flags := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	httpAddr := flags.String("http", "", "serve streamable HTTP on this address")
	sseAddr := flags.String("sse", "", "serve SSE on this address")
	_ = flags.Parse(os.Args[1:])

	if msg := os.Getenv("MCPSERVER_FAIL_START"); msg != "" {
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(1)
	}
	if os.Getenv("MCPSERVER_CHILD") != "" {
		signal.Ignore(syscall.SIGTERM)
		select {}
	}
	stubborn := os.Getenv("MCPSERVER_STUBBORN")
	if stubborn != "" {
		signal.Ignore(syscall.SIGTERM)
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), "MCPSERVER_CHILD=1")
		if os.Getenv("MCPSERVER_SETSID") != "" { // the child leaves the server's process group
			child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		}
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_ = os.WriteFile(stubborn, []byte(strconv.Itoa(child.Process.Pid)), 0o600)
	}
	if f := os.Getenv("MCPSERVER_STARTS"); f != "" {
		out, err := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintf(out, "%d\n", os.Getpid())
			_ = out.Close()
		}
	}

	s := server.NewMCPServer("mcpserver", "1.0.0", server.WithToolCapabilities(false))
	addTools(s)

	var err error
	switch {
	case *httpAddr != "":
		err = listen(*httpAddr, "/mcp", server.NewStreamableHTTPServer(s))
	case *sseAddr != "":
		ln, lerr := net.Listen("tcp", *sseAddr)
		if lerr != nil {
			err = lerr
			break
		}
		base := "http://" + ln.Addr().String()
		sse := server.NewSSEServer(s, server.WithBaseURL(base))
		fmt.Printf("listening %s/sse\n", base)
		err = http.Serve(ln, sse)
	default:
		err = server.NewStdioServer(s).Listen(context.Background(), os.Stdin, os.Stdout)
		if stubborn != "" {
			select {} // input ended: keep running anyway
		}
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func listen(addr, path string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Printf("listening http://%s%s\n", ln.Addr().String(), path)
	mux := http.NewServeMux()
	mux.Handle(path, h)
	return http.Serve(ln, mux)
}

func schema(s string) json.RawMessage { return json.RawMessage(s) }

func addTools(s *server.MCPServer) {
	readOnly := true
	echo := mcp.NewToolWithRawSchema("echo", "Returns its text.",
		schema(`{"type":"object","properties":{"text":{"type":"string","description":"what to echo"}},"required":["text"]}`))
	echo.Annotations.ReadOnlyHint = &readOnly
	echo.Annotations.IdempotentHint = &readOnly
	echo.Title = "Echo"
	s.AddTool(echo, func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(r.GetString("text", "")), nil
	})

	s.AddTool(mcp.NewToolWithRawSchema("add", "Adds two numbers.",
		schema(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)),
		func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			sum := r.GetFloat("a", 0) + r.GetFloat("b", 0)
			return mcp.NewToolResultStructured(map[string]any{"sum": sum}, strconv.FormatFloat(sum, 'g', -1, 64)), nil
		})

	s.AddTool(mcp.NewToolWithRawSchema("fail", "Always fails with its message.",
		schema(`{"type":"object","properties":{"message":{"type":"string"}}}`)),
		func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError(r.GetString("message", "failed")), nil
		})

	s.AddTool(mcp.NewToolWithRawSchema("slow", "Waits ms milliseconds.",
		schema(`{"type":"object","properties":{"ms":{"type":"integer"}},"required":["ms"]}`)),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			select {
			case <-time.After(time.Duration(r.GetInt("ms", 0)) * time.Millisecond):
				return mcp.NewToolResultText("done"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})

	s.AddTool(mcp.NewToolWithRawSchema("progress", "Reports steps progress notifications, each followed by "+
		"delay_ms of work, then returns.",
		schema(`{"type":"object","properties":{"steps":{"type":"integer"},"delay_ms":{"type":"integer"}},"required":["steps"]}`)),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			steps := r.GetInt("steps", 0)
			var token mcp.ProgressToken
			if r.Params.Meta != nil {
				token = r.Params.Meta.ProgressToken
			}
			if token != nil {
				for i := 1; i <= steps; i++ {
					err := server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress",
						map[string]any{"progressToken": token, "progress": i, "total": steps,
							"message": fmt.Sprintf("step %d", i)})
					if err != nil {
						return mcp.NewToolResultError("progress: " + err.Error()), nil
					}
					time.Sleep(time.Duration(r.GetInt("delay_ms", 0)) * time.Millisecond)
				}
			}
			return mcp.NewToolResultText(fmt.Sprintf("%d steps", steps)), nil
		})

	s.AddTool(mcp.NewToolWithRawSchema("crash", "Exits the server mid-call. With once, only when the file once "+
		"names does not exist yet (it is created first).",
		schema(`{"type":"object","properties":{"once":{"type":"string"}}}`)),
		func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if once := r.GetString("once", ""); once != "" {
				if _, err := os.Stat(once); err == nil {
					return mcp.NewToolResultText("survived"), nil
				}
				_ = os.WriteFile(once, []byte("x"), 0o600)
			}
			fmt.Fprintln(os.Stderr, "mcpserver: crashing on purpose")
			os.Exit(3)
			return nil, nil
		})

	s.AddTool(mcp.NewToolWithRawSchema("image", "Returns a caption and a tiny image.",
		schema(`{"type":"object","properties":{}}`)),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultImage("a dot", "iVBORw0KGgo=", "image/png"), nil
		})

	s.AddTool(mcp.NewToolWithRawSchema("pid", "Returns the server's process id.", schema(`{"type":"object"}`)),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultStructured(map[string]any{"pid": os.Getpid()}, strconv.Itoa(os.Getpid())), nil
		})

	s.AddTool(mcp.NewToolWithRawSchema("env", "Returns the values of the named environment variables.",
		schema(`{"type":"object","properties":{"names":{"type":"array","items":{"type":"string"}}},"required":["names"]}`)),
		func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			out := map[string]any{}
			names, _ := r.GetArguments()["names"].([]any)
			for _, n := range names {
				name, _ := n.(string)
				if v, ok := os.LookupEnv(name); ok {
					out[name] = v
				}
			}
			return mcp.NewToolResultStructured(out, "env"), nil
		})

	s.AddTool(mcp.NewToolWithRawSchema("unusable", "Has a schema with a remote reference.",
		schema(`{"type":"object","properties":{"x":{"$ref":"https://example.com/x.json"}}}`)),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("never"), nil
		})

	s.AddTool(mcp.NewToolWithRawSchema("dotted.name", "Has a name that is no valid action name.",
		schema(`{"type":"object"}`)),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("never"), nil
		})
}
