package mcpserve_test

// Clients of a served manifest, as the tests make them: mcp-go's and the official go-sdk's, over stdio on
// in-memory pipes, over streamable HTTP (the Server's one task, or a task per session) and in process.

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/mcpserve"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// transports are the ways a test serves a manifest: stdio, streamable HTTP with the Server's one task, and
// streamable HTTP with a task per session (mcpserve.Handler).
var transports = []string{"stdio", "http", "sessions"}

// httpURL serves s.Handler() on an httptest server or, for transport "sessions", a handler of tl that starts a
// task per session; it returns the server's URL. Both end with t.
func httpURL(t *testing.T, s *mcpserve.Server, tl *tool.Tool, transport string) string {
	t.Helper()
	var h http.Handler = s.Handler()
	if transport == "sessions" {
		sh := mcpserve.Handler(tl, func(ctx context.Context) (*tool.Task, error) {
			return tl.NewTask(ctx, tool.TaskConfig{})
		}, mcpserve.SessionConfig{})
		t.Cleanup(func() { _ = sh.Close(context.Background()) })
		h = sh
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// pipes serves s over stdio on in-memory pipes until ctx ends or the client's writer w is closed; the client reads
// r. served receives ServeStdio's result.
func pipes(ctx context.Context, s *mcpserve.Server, opts ...server.StdioOption) (r io.ReadCloser, w io.WriteCloser,
	served <-chan error) {
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- s.ServeStdio(ctx, serverIn, serverOut, opts...)
		_ = serverOut.Close()
	}()
	return clientIn, clientOut, done
}

// overPipes serves s over stdio on in-memory pipes and returns a client of it, and stop, which closes the client
// and returns ServeStdio's result.
func overPipes(ctx context.Context, s *mcpserve.Server, opts ...server.StdioOption) (*mcpclient.Client, func() error) {
	clientIn, clientOut, served := pipes(ctx, s, opts...)
	c := mcpclient.NewClient(transport.NewIO(clientIn, clientOut, nil))
	return c, func() error {
		// io.Pipe has no buffer: once the server stops reading (its ctx ended), a client write would block for
		// ever while holding the transport's lock. Closing the write end first ends such writes (and gives the
		// server a clean end of input).
		_ = clientOut.Close()
		_ = c.Close()
		_ = clientIn.Close() // a response still being written ends
		return <-served
	}
}

// initialize starts c and runs the handshake, failing t when either fails.
func initialize(t *testing.T, ctx context.Context, c *mcpclient.Client) {
	t.Helper()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcpgo.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
}

// connect opens an MCP session with headers.
func connect(t *testing.T, url string, headers map[string]string) (*mcpclient.Client, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := mcpclient.NewStreamableHttpClient(url, transport.WithHTTPHeaders(headers))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	if _, err := c.Initialize(ctx, mcpgo.InitializeRequest{}); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// mcpGoClient returns an mcp-go client of s (a Server of tl) over transport, one of transports, that has shaken
// hands; it is closed at the end of t.
func mcpGoClient(t *testing.T, ctx context.Context, s *mcpserve.Server, tl *tool.Tool, transport string) *mcpclient.Client {
	t.Helper()
	if transport == "stdio" {
		c, stop := overPipes(ctx, s)
		t.Cleanup(func() { _ = stop() })
		initialize(t, ctx, c)
		return c
	}
	c, err := connect(t, httpURL(t, s, tl, transport), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newServer starts a Server of tl, with a task of its own, closed at the end of t.
func newServer(t *testing.T, ctx context.Context, tl *tool.Tool) *mcpserve.Server {
	t.Helper()
	s, err := mcpserve.New(ctx, tl, tool.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// newInProcess starts a task of tl served by mcpserve, and an in-process client of it that has shaken hands.
func newInProcess(t *testing.T, tl *tool.Tool) (*mcpserve.Server, *mcpclient.Client) {
	t.Helper()
	ctx := context.Background()
	s := newServer(t, ctx, tl)
	c, err := mcpclient.NewInProcessClient(s.MCPServer())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	initialize(t, ctx, c)
	return s, c
}

// goSDKSession connects the official go-sdk's client over tr; the session is closed at the end of t.
func goSDKSession(t *testing.T, ctx context.Context, tr mcp.Transport) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// goSDKOverHTTP connects the go-sdk's client to the streamable HTTP endpoint url.
func goSDKOverHTTP(t *testing.T, ctx context.Context, url string) *mcp.ClientSession {
	t.Helper()
	return goSDKSession(t, ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1})
}

// goSDKClient returns a go-sdk client session of s (a Server of tl) over transport, one of transports; it ends
// with t.
func goSDKClient(t *testing.T, ctx context.Context, s *mcpserve.Server, tl *tool.Tool, transport string) *mcp.ClientSession {
	t.Helper()
	if transport == "stdio" {
		r, w, _ := pipes(ctx, s)
		t.Cleanup(func() { _ = w.Close() })
		return goSDKSession(t, ctx, &mcp.IOTransport{Reader: r, Writer: w})
	}
	return goSDKOverHTTP(t, ctx, httpURL(t, s, tl, transport))
}
