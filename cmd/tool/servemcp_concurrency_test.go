package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/commonagents-go/tool/tooltest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pagesManifest reads a page with a GET: read-only and concurrency-safe.
const pagesManifest = "../../testdata/ok/pages.yaml"

// TestServeMCPRunsParallelCallsTogether: serve-mcp runs read-only, concurrency-safe calls from parallel callers
// at once, more of them than mcp-go's default stdio worker pool of 5: the backend answers only once 8 requests
// are in flight.
func TestServeMCPRunsParallelCallsTogether(t *testing.T) {
	t.Parallel()
	const parallel = 8
	backend := httptest.NewServer(&tooltest.Barrier{N: parallel, Body: `{"text":"together"}`})
	t.Cleanup(backend.Close)
	settings := writeFile(t, "settings.yaml", "base_url: "+backend.URL+"\n")
	s := serveMCP(t, pagesManifest, "--settings", settings)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for range parallel {
		wg.Go(func() {
			res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "pages", Arguments: map[string]any{}})
			if err != nil {
				t.Errorf("call: %v", err)
				return
			}
			if text := res.Content[0].(*mcp.TextContent).Text; res.IsError || text != "together" {
				t.Errorf("call: isError %v, %q (a call that never ran with the others in flight times out)",
					res.IsError, text)
			}
		})
	}
	wg.Wait()
}

// TestServeMCPWorkersFlag: --workers bounds the calls at once, and is checked.
func TestServeMCPWorkersFlag(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"0", "101"} {
		code, _, stderr := runTool(t, "serve-mcp", "--workers", bad, pagesManifest)
		if code != exitUsage || !strings.Contains(stderr, "--workers "+bad+": want 1 to 100") {
			t.Errorf("--workers %s: exit %d, %q", bad, code, stderr)
		}
	}
	code, _, stderr := runTool(t, "serve-mcp", "--http-conns", "-1", pagesManifest)
	if code != exitUsage || !strings.Contains(stderr, "--http-conns -1") {
		t.Errorf("--http-conns -1: exit %d, %q", code, stderr)
	}
}
