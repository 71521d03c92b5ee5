package tool_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The README's Usage snippet compiles as the body of a function that returns an error: every error it meets is
// handled (returned), none falls through to use a nil value, and it uses the names the package exports.
func TestReadmeUsageSnippetCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	src, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	usage := string(src[strings.Index(string(src), "## Usage"):])
	start := strings.Index(usage, "```go\n") + len("```go\n")
	snippet := usage[start : start+strings.Index(usage[start:], "```")]
	prog := `package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/commonagents-go/tool"
)

func run(ctx context.Context, llmCallID string, send func(string), offer func([]map[string]any)) error {
` + snippet + `	return nil
}

func main() { _ = run(context.Background(), "call_1", func(string) {}, func([]map[string]any) {}) }
`
	dir, err := os.MkdirTemp(".", "_readme") // inside the module, so the import resolves; "_" keeps it out of ./...
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(prog), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("go", "vet", "./"+dir).CombinedOutput(); err != nil {
		t.Fatalf("the Usage snippet does not compile: %v\n%s\n%s", err, out, prog)
	}
}
