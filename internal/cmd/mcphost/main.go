// Command mcphost is the smallest library host of a manifest over MCP stdio: tool.LoadFile, mcpserve.New and
// ServeStdio, with the library's defaults. It is the baseline `tool serve-mcp` is measured against (BENCHMARKS.md).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/commonagents-go/tool"
	"github.com/commonagents-go/tool/mcpserve"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: mcphost MANIFEST")
		os.Exit(2)
	}
	ctx := context.Background()
	tl, err := tool.LoadFile(ctx, os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s, err := mcpserve.New(ctx, tl, tool.TaskConfig{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serveErr := s.ServeStdio(ctx, os.Stdin, os.Stdout)
	if err := s.Close(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	if serveErr != nil {
		fmt.Fprintln(os.Stderr, serveErr)
		os.Exit(1)
	}
}
