// Command quickstart loads a tool manifest, validates it, and prints the functions an LLM would see and the
// host's catalog of actions. It needs no flags and no network.
package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/commonagents-go/tool"
)

//go:embed github-file.yaml
var manifest []byte

func main() {
	ctx := context.Background()
	t, err := tool.Load(ctx, manifest, tool.WithSettings(map[string]any{
		"github.token": "ghp-example-not-a-real-token",
		"github.owner": "octo-org",
		"github.repo":  "hello-world",
	}))
	if err != nil {
		var verr *tool.ValidationError
		if errors.As(err, &verr) {
			for _, p := range verr.Problems {
				fmt.Fprintln(os.Stderr, p)
			}
		}
		log.Fatal(err)
	}
	fmt.Printf("loaded %s/%s\n\n", t.Namespace(), t.Name())

	// What the LLM sees: one function per action, bound parameters hidden.
	functions := t.Functions(tool.Capability{Key: "repo-files", Bindings: map[string]any{"branch": "main"}})
	fmt.Println("functions for the LLM:")
	for _, f := range functions {
		fmt.Printf("  %s — %s\n    parameters: %s\n", f.Name, f.Description, f.Parameters)
	}

	// What the host sees: flags for scheduling and policy.
	fmt.Println("\ncatalog (the capability includes only read_file):")
	for _, e := range t.Catalog(tool.Capability{Key: "repo-files", Include: []string{"read_file"}}) {
		fmt.Printf("  %-22s policy=%-7s owner=%s read_only=%t destructive=%t idempotent=%t capabilities=%v\n",
			e.ToolName, e.Policy, e.RuntimeOwner, e.IsReadOnly, e.IsDestructive, e.IsIdempotent, e.Capabilities)
	}

	// A broken manifest reports every problem at once, with field paths and lines.
	_, err = tool.Load(ctx, []byte(broken))
	var verr *tool.ValidationError
	if errors.As(err, &verr) {
		fmt.Printf("\na broken manifest has %d problems:\n", len(verr.Problems))
		for _, p := range verr.Problems {
			fmt.Printf("  %s\n", p)
		}
	}
}

const broken = `kind: commonagents.info/v1beta2/tool
namespace: demo
name: broken
description: A manifest with mistakes.
actions:
  - name: fetch
    description: Fetches a page.
    execute:
      stateless_http:
        method: FETCH
        url: "https://{parameters.host}/pages/{parameters.page}"
        headers:
          X-Trace: "{paramters.trace}"
`
