package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpServer is a `tool serve-mcp --http` process.
type httpServer struct {
	url    string
	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr bytes.Buffer
	done   chan struct{} // closed when its stderr ends
}

func (s *httpServer) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// serveMCPHTTP starts `tool serve-mcp manifest --http 127.0.0.1:0 extra...` with env and returns once it serves.
func serveMCPHTTP(t *testing.T, manifest string, env []string, extra ...string) *httpServer {
	t.Helper()
	cmd := exec.Command(toolBinary(t), append([]string{"serve-mcp", manifest, "--http", "127.0.0.1:0"}, extra...)...)
	cmd.Env = append(cmd.Environ(), env...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &httpServer{cmd: cmd, done: make(chan struct{})}
	urls := make(chan string, 1)
	go func() {
		defer close(s.done)
		r := bufio.NewReader(pipe)
		for {
			line, err := r.ReadString('\n')
			s.mu.Lock()
			s.stderr.WriteString(line)
			s.mu.Unlock()
			if u, ok := strings.CutPrefix(strings.TrimSpace(line), "tool serve-mcp: serving MCP on "); ok {
				urls <- u
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-s.done
		_ = cmd.Wait()
	})
	select {
	case s.url = <-urls:
	case <-s.done:
		t.Fatalf("serve-mcp ended before serving: %s", s.log())
	case <-time.After(time.Minute):
		t.Fatalf("serve-mcp did not serve within a minute: %s", s.log())
	}
	return s
}

// withToken adds a bearer token to every request.
type withToken struct{ token string }

func (w withToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+w.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestServeMCPOverHTTP: --http serves the functions over streamable HTTP behind the bearer token, never logs the
// token, and ends cleanly on SIGTERM.
func TestServeMCPOverHTTP(t *testing.T) {
	t.Parallel()
	const token = "s3cret-token-value"
	file := writeFile(t, "calc.yaml", calcManifest)
	srv := serveMCPHTTP(t, file, []string{"MCP_TOKEN=" + token}, "--token-env", "MCP_TOKEN")

	resp, err := http.Post(srv.url, "application/json",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("without the token: %d %q, want 401 with a Bearer challenge", resp.StatusCode,
			resp.Header.Get("WWW-Authenticate"))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-test", Version: "1"}, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: withToken{token}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "calc_shout", Arguments: map[string]any{"name": "ada"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "ADA" {
		t.Fatalf("calc_shout: %v %+v", err, res)
	}
	_ = s.Close()

	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-srv.done
	if err := srv.cmd.Wait(); err != nil {
		t.Errorf("serve-mcp after SIGTERM: %v (%s)", err, srv.log())
	}
	if strings.Contains(srv.log(), token) {
		t.Errorf("the token was logged: %s", srv.log())
	}
}

// TestServeMCPHTTPNeedsATokenOffLoopback: a non-loopback address is refused without a token unless --insecure.
func TestServeMCPHTTPNeedsATokenOffLoopback(t *testing.T) {
	t.Parallel()
	file := writeFile(t, "calc.yaml", calcManifest)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"serve-mcp", file, "--http", "0.0.0.0:0"}, &stdout, &stderr)
	if code != exitUsage || !strings.Contains(stderr.String(), "--insecure") {
		t.Errorf("exit %d, stderr %q; want a usage error naming --insecure", code, stderr.String())
	}
}

// TestServeMCPHTTPBoundsASessionsProcesses: the processes a session's task starts count against --max-processes.
// Each action runs its own stdio MCP server (this tool, serving calc over stdio): with a bound of one, a session
// whose first server runs gets a recoverable error naming the limit for the second, and its first server still
// answers; another session has a bound of its own.
func TestServeMCPHTTPBoundsASessionsProcesses(t *testing.T) {
	t.Parallel()
	calc := writeFile(t, "calc.yaml", calcManifest)
	server := func(n int) string {
		return fmt.Sprintf(`  - name: shout%d
    description: Shouts through server %d.
    parameters:
      properties:
        name: {type: string}
    execute:
      mcp:
        tool_name: calc_shout
        transport: stdio
        command: %s
        args: [serve-mcp, %s, --workers, "%d"]
`, n, n, toolBinary(t), calc, n)
	}
	gw := writeFile(t, "gw.yaml", "kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: gw\n"+
		"description: Two stdio servers.\nactions:\n"+server(1)+server(2))
	srv := serveMCPHTTP(t, gw, nil, "--max-processes", "1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-test", Version: "1"}, nil)
	call := func(s *mcp.ClientSession, name string) (bool, string) {
		t.Helper()
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"name": "ada"}})
		if err != nil {
			t.Fatalf("%s: %v (%s)", name, err, srv.log())
		}
		return res.IsError, res.Content[0].(*mcp.TextContent).Text
	}
	sessions := make([]*mcp.ClientSession, 2)
	for n := range sessions {
		s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.url, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		sessions[n] = s
	}
	if isErr, text := call(sessions[0], "gw_shout1"); isErr || text != "ADA" {
		t.Fatalf("gw_shout1: %v %q", isErr, text)
	}
	isErr, text := call(sessions[0], "gw_shout2")
	if !isErr || !strings.Contains(text, "unavailable") || !strings.Contains(text, "max_processes 1") {
		t.Errorf("a second server in the session: isError %v %q, want an unavailable error naming the limit", isErr,
			text)
	}
	if isErr, text := call(sessions[0], "gw_shout1"); isErr || text != "ADA" {
		t.Errorf("the session's first server after the refusal: %v %q", isErr, text)
	}
	if isErr, text := call(sessions[1], "gw_shout2"); isErr || text != "ADA" {
		t.Errorf("another session's server: %v %q", isErr, text)
	}
}
