package tool_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/commonagents-go/tool"
)

// readmeGoBlock returns the first ```go block of the README.
func readmeGoBlock(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var body strings.Builder
	in := false
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && line == "```go":
			in = true
		case in && strings.HasPrefix(line, "```"):
			return body.String()
		case in:
			body.WriteString(line + "\n")
		}
	}
	t.Fatal("README.md has no ```go block")
	return ""
}

// The README's first code block is a whole program, kept byte for byte as examples/sdk/readme/main.go. That folder
// is in the examples/sdk module (which requires openai-go v3 and this library through a replace), where .ci/run's
// `go vet ./...` compiles it. The copy is checked here rather than built, so that the test command needs neither
// that module's downloads nor a second build on a new machine (a cold go vet of it took 9.5 min under load).
func TestReadmeFirstProgramVets(t *testing.T) {
	prog := readmeGoBlock(t)
	if !strings.HasPrefix(prog, "package main\n") || !strings.Contains(prog, "\nfunc main() {") {
		t.Fatalf("the README's first ```go block is not a whole program (package main with func main):\n%s", prog)
	}
	for _, want := range []string{"task.Functions()", "task.InvokeFunction(tool.ContextWithCallID(ctx, ", "res.Text()", "task.Close(ctx)"} {
		if !strings.Contains(prog, want) {
			t.Errorf("the README's program does not use %s", want)
		}
	}
	const copyPath = "examples/sdk/readme/main.go"
	kept, err := os.ReadFile(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	if string(kept) != prog {
		t.Errorf("%s differs from the README's first program: copy the README's block into it, so that .ci/run vets "+
			"what the README shows", copyPath)
	}
}

// The README's manifest is the one its program loads: it loads without a problem or a warning with the settings
// the program gives, a task with the program's binding starts, and it offers the one function the text names.
func TestReadmeManifestLoads(t *testing.T) {
	examples := docExamples(t, "README.md")
	if len(examples) != 1 || examples[0].kind != "" {
		t.Fatalf("want one complete ```yaml manifest in README.md, found %d", len(examples))
	}
	ctx := context.Background()
	loaded, err := tool.Load(ctx, []byte(examples[0].text), tool.WithSettings(map[string]any{
		"token": "ghp-test", "webhook_secret": "whsec-test"}))
	if err != nil {
		t.Fatalf("README.md:%d: %v", examples[0].line, err)
	}
	if w := loaded.Warnings(); len(w) > 0 {
		t.Errorf("README.md:%d: the manifest loads with warnings: %v", examples[0].line, w)
	}
	if _, err := loaded.NewTask(ctx, tool.TaskConfig{}); err == nil {
		t.Error("a task without the repo_id binding started: require_binding is not what the README says")
	}
	task, err := loaded.NewTask(ctx, tool.TaskConfig{Capability: tool.Capability{
		Bindings: map[string]any{"repo_id": 1296269}}})
	if err != nil {
		t.Fatal(err)
	}
	defer task.Close(ctx)
	var names []string
	for _, f := range task.Functions() {
		names = append(names, f.Name)
		if strings.Contains(string(f.Parameters), "repo_id") {
			t.Errorf("function %s shows the bound parameter repo_id to the LLM: %s", f.Name, f.Parameters)
		}
	}
	if !slices.Equal(names, []string{"issues"}) {
		t.Errorf("the README says the manifest's one function is issues; it offers %q", names)
	}
}

// The README stays short enough to read in one sitting (issue 32: at most 400 lines), and starts with its contents.
func TestReadmeLength(t *testing.T) {
	src, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(src, []byte("\n")); n > 400 {
		t.Errorf("README.md has %d lines; keep it at 400 or fewer and move reference material to docs/", n)
	}
	head := string(src[:min(len(src), 3000)])
	if !strings.Contains(head, "\n## Contents\n") {
		t.Error("README.md has no table of contents (## Contents) near its top")
	}
}
