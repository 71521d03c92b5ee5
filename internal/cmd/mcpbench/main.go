// Command mcpbench measures how many tools/call an MCP server answers per second, over stdio (the command after
// --) or streamable HTTP (-url), with -c calls in flight on one session. It prints "calls/s N". Used by
// scripts/bench-serve-mcp.sh (BENCHMARKS.md).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

func main() {
	url := flag.String("url", "", "streamable HTTP endpoint (else: the command after --, over stdio)")
	n := flag.Int("n", 2000, "calls to make")
	c := flag.Int("c", 1, "calls in flight")
	name := flag.String("tool", "shout", "the tool to call")
	args := flag.String("args", `{"name":"x"}`, "the call's arguments (JSON object)")
	flag.Parse()
	if err := run(*url, flag.Args(), *n, *c, *name, *args); err != nil {
		fmt.Fprintln(os.Stderr, "mcpbench:", err)
		os.Exit(1)
	}
}

func run(url string, command []string, n, c int, name, rawArgs string) error {
	var arguments map[string]any
	if err := json.Unmarshal([]byte(rawArgs), &arguments); err != nil {
		return fmt.Errorf("-args: %w", err)
	}
	ctx := context.Background()
	var cl *client.Client
	var err error
	if url != "" {
		cl, err = client.NewStreamableHttpClient(url)
	} else if len(command) > 0 {
		cl, err = client.NewStdioMCPClient(command[0], nil, command[1:]...)
	} else {
		return fmt.Errorf("give -url or a command after --")
	}
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := cl.Start(ctx); err != nil {
		return err
	}
	if _, err := cl.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		return err
	}
	call := func() error {
		req := mcp.CallToolRequest{}
		req.Params.Name = name
		req.Params.Arguments = arguments
		res, err := cl.CallTool(ctx, req)
		if err == nil && res.IsError {
			err = fmt.Errorf("the tool failed: %+v", res.Content)
		}
		return err
	}
	for range 50 { // warm up
		if err := call(); err != nil {
			return err
		}
	}
	var left atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	start := time.Now()
	for range c {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if err := call(); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if first != nil {
		return first
	}
	fmt.Printf("calls/s %.0f\n", float64(n)/elapsed.Seconds())
	return nil
}
