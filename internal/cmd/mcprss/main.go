// Command mcprss measures the memory of an MCP server over stdio: it starts the command given after "--", makes
// -calls tools/call requests of -tool with -args (8 at a time), and prints the server's resident set (VmRSS, split
// into anonymous memory and pages of the executable) and its peak (VmHWM) from /proc, in MiB. BENCHMARKS.md
// compares `tool serve-mcp` with a library host (internal/cmd/mcphost) with it.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

func main() {
	name := flag.String("tool", "", "the MCP tool to call (default: the first listed)")
	args := flag.String("args", "{}", "the call's arguments, a JSON object")
	calls := flag.Int("calls", 200, "how many calls to make")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: mcprss [-tool NAME] [-args JSON] [-calls N] -- COMMAND [ARG...]")
		os.Exit(2)
	}
	if err := run(*name, *args, *calls, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "mcprss:", err)
		os.Exit(1)
	}
}

func run(name, rawArgs string, calls int, command []string) error {
	var args map[string]any
	if err := json.Unmarshal([]byte(rawArgs), &args); err != nil {
		return fmt.Errorf("-args: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = in.Close(); _ = cmd.Wait() }()
	c := mcpclient.NewClient(transport.NewIO(out, in, nil))
	if err := c.Start(ctx); err != nil {
		return err
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if name == "" {
		list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil || len(list.Tools) == 0 {
			return fmt.Errorf("list tools: %v (%d tools)", err, len(list.Tools))
		}
		name = list.Tools[0].Name
	}
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	sem := make(chan struct{}, 8)
	for range calls {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			req := mcp.CallToolRequest{}
			req.Params.Name, req.Params.Arguments = name, args
			res, err := c.CallTool(ctx, req)
			if err == nil && res.IsError {
				err = fmt.Errorf("%s: %v", name, res.Content)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		return err
	}
	fmt.Printf("%s: VmRSS %s MiB (anonymous %s, file %s), VmHWM %s MiB\n", strings.Join(command, " "),
		field(status, "VmRSS"), field(status, "RssAnon"), field(status, "RssFile"), field(status, "VmHWM"))
	return nil
}

// field returns a /proc status field in MiB.
func field(status []byte, key string) string {
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			var kb float64
			fmt.Sscanf(strings.TrimSpace(v), "%f", &kb)
			return fmt.Sprintf("%.1f", kb/1024)
		}
	}
	return "?"
}
