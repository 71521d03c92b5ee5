// Command mcpbench measures how many tools/call an MCP server answers per second, over stdio (the command after
// --) or streamable HTTP (-url), with -c calls in flight on one session. It prints "calls/s N cpu_us/call M": M
// is the CPU time (user + system) the server process spent per timed call, read from /proc: the server over stdio
// is this process's child; over HTTP, -pid names it. On a shared machine wall-clock rates swing with other work
// while the CPU a call costs barely does. Used by scripts/bench-serve-mcp.sh (BENCHMARKS.md).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	pid := flag.Int("pid", 0, "the HTTP server's process, for its CPU time (stdio: the child started)")
	flag.Parse()
	if err := run(*url, flag.Args(), *n, *c, *name, *args, *pid); err != nil {
		fmt.Fprintln(os.Stderr, "mcpbench:", err)
		os.Exit(1)
	}
}

func run(url string, command []string, n, c int, name, rawArgs string, pid int) error {
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
	if pid == 0 {
		if pid, err = child(); err != nil {
			return err
		}
	}
	cpu0, err := cpuTicks(pid)
	if err != nil {
		return err
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
	cpu1, err := cpuTicks(pid)
	if err != nil {
		return err
	}
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	perCall := float64(cpu1-cpu0) * float64(tick.Microseconds()) / float64(n)
	fmt.Printf("calls/s %.0f cpu_us/call %.1f\n", float64(n)/elapsed.Seconds(), perCall)
	return nil
}

// cpuTicks is the user plus system time of a process, in clock ticks (/proc/PID/stat fields 14 and 15).
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; the fields after it follow its closing parenthesis.
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	var sum int64
	for _, f := range fields[11:13] { // utime, stime: fields 14 and 15 counted from the pid
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

// child is the one process this one started (the stdio server).
func child() (int, error) {
	files, _ := filepath.Glob("/proc/self/task/*/children")
	var pids []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return 0, err
		}
		pids = append(pids, strings.Fields(string(b))...)
	}
	if len(pids) != 1 {
		return 0, fmt.Errorf("want one child process (the stdio server), found %d: give -pid", len(pids))
	}
	return strconv.Atoi(pids[0])
}
