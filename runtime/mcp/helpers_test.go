package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/internal/testflags"
	"github.com/commonagents-go/tool/runtime/mcp/internal/mcpserver"
)

// serverBin is the test MCP server (internal/mcpserver): a link to the test binary named mcpserver, made by
// TestMain.
var serverBin string

// TestMain runs the test MCP server when the test binary is run under the name mcpserver, a fake server when
// MCP_FAKE_TOOL_REPLY names a reply, and the tests otherwise. The server dispatches on the name it is run under,
// not on an environment variable, since the backend gives a stdio server only PATH, HOME and the variables its
// manifest lists.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "mcpserver" {
		mcpserver.Main()
		helperExit()
	}
	if reply := fakeReplies[os.Getenv("MCP_FAKE_TOOL_REPLY")]; reply != "" {
		fakeStdioServer(reply)
		helperExit()
	}
	dir, err := linkServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, "linking the test MCP server:", err)
		os.Exit(1)
	}
	serverBin = filepath.Join(dir, "mcpserver")
	testflags.WaitBoundParallel(4) // the parallel tests wait on real timeouts of real servers
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// helperExit ends a helper process that succeeded. Not os.Exit(0): under -race that runs the race detector's
// finalizer, which sleeps a second (GORACE atexit_sleep_ms) when goroutines remain, and the backend passes no
// GORACE to its processes; a second at each exit would slow every call and trip the teardown bounds. A race in a
// helper is still reported on its stderr when it happens.
func helperExit() { syscall.Exit(0) }

// linkServer makes a temporary directory holding a link named mcpserver to the test binary.
func linkServer() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "mcpserver-")
	if err != nil {
		return "", err
	}
	if err := os.Symlink(self, filepath.Join(dir, "mcpserver")); err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// fakeReplies are the tools/call replies fakeStdioServer can give, by the name the test passes in the environment
// variable MCP_FAKE_TOOL_REPLY (a name, since manifest values are templates).
var fakeReplies = map[string]string{
	"not_a_tool_result": `{"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"text","text":5}]}}`,
}

// fakeStdioServer is a minimal MCP server on stdin and stdout, for replies no real server sends: it answers the
// handshake and answers every tools/call with the line reply, in which ID stands for the request's id.
func fakeStdioServer(reply string) {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		switch req.Method {
		case "initialize":
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},`+
				`"serverInfo":{"name":"fake","version":"1"}}}`+"\n", req.ID)
		case "tools/call":
			fmt.Println(strings.ReplaceAll(reply, "ID", string(req.ID)))
		default:
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", req.ID)
		}
	}
}

// remoteServer runs the test server as a separate process listening on loopback with flag (-http or -sse) and
// returns its URL and process; the process is killed at the end of the test.
func remoteServer(t testing.TB, flag string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(serverBin, flag, "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the server's address: %v", err)
	}
	u, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if !ok {
		t.Fatalf("unexpected first line %q", line)
	}
	return u, cmd
}

// toolParams are the parameters of the test server's tools, as manifest YAML (properties, indented by eight).
var toolParams = map[string]string{
	"echo":     "        text: {type: string}\n",
	"add":      "        a: {type: number}\n        b: {type: number}\n",
	"fail":     "        message: {type: string}\n",
	"slow":     "        ms: {type: integer}\n",
	"progress": "        steps: {type: integer}\n        delay_ms: {type: integer, default: 0}\n",
	"crash":    "        once: {type: string, default: \"\"}\n",
	"env":      "        names: {type: array, items: {type: string}}\n",
}

// manifest returns a tool manifest whose top-level mcp block is server (YAML lines, indented by two) and whose
// actions are the named tools of the test server bound to it.
func manifest(server string, actions ...string) string {
	var b strings.Builder
	b.WriteString("kind: commonagents.info/v1beta2/tool\nnamespace: tests\nname: mcptest\ndescription: The test MCP server.\n")
	b.WriteString("mcp:\n" + server + "\nactions:\n")
	for _, a := range actions {
		fmt.Fprintf(&b, "  - name: %s\n    description: Calls %s.\n    parameters:\n      properties:\n", a, a)
		if p := toolParams[a]; p != "" {
			b.WriteString(p)
		} else {
			b.WriteString("        {}\n")
		}
		b.WriteString("    execute:\n      mcp: {}\n")
	}
	return b.String()
}

// idempotent marks the named actions of a manifest made by manifest idempotent: a call whose reply was lost is
// sent again.
func idempotent(src string, actions ...string) string {
	for _, a := range actions {
		src = strings.Replace(src, "  - name: "+a+"\n", "  - name: "+a+"\n    annotations: {idempotent: true}\n", 1)
	}
	return src
}

// stdioServer is the server block running the test server over stdio with extra env lines.
func stdioServer(env ...string) string {
	s := "  transport: stdio\n  command: " + serverBin + "\n"
	if len(env) > 0 {
		s += "  env:\n"
		for _, e := range env {
			s += "    " + e + "\n"
		}
	}
	return s
}

func load(t testing.TB, src string, opts ...tool.Option) *tool.Tool {
	t.Helper()
	tl, err := tool.Load(context.Background(), []byte(src), opts...)
	if err != nil {
		t.Fatalf("load: %v\n%s", err, src)
	}
	return tl
}

func newTask(t testing.TB, tl *tool.Tool) *tool.Task {
	t.Helper()
	task, err := tl.NewTask(context.Background(), tool.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_ = task.Close(ctx)
	})
	return task
}

// lines returns the non-empty lines of file, none when it does not exist.
func lines(t testing.TB, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// facts records lifecycle facts.
type facts struct {
	mu  sync.Mutex
	all []tool.Fact
}

func (f *facts) Observe(_ context.Context, fact tool.Fact) {
	f.mu.Lock()
	f.all = append(f.all, fact)
	f.mu.Unlock()
}

func (f *facts) named(name string) []tool.Fact {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []tool.Fact
	for _, x := range f.all {
		if x.Name == name {
			out = append(out, x)
		}
	}
	return out
}
