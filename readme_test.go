package tool_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/commonagents-go/tool"
)

// readmeBlock is one fenced block of the README.
type readmeBlock struct {
	lang    string // the word after the opening fence: "go", "text", ...
	section string // the ## heading it is under
	text    string
}

// readmeBlocks returns the README's fenced blocks, in order.
func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	src, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var blocks []readmeBlock
	var cur *readmeBlock
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &readmeBlock{lang: strings.TrimPrefix(line, "```"), section: section}
		case cur != nil && strings.HasPrefix(line, "```"):
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		case strings.HasPrefix(line, "## "):
			section = strings.TrimPrefix(line, "## ")
		}
	}
	if cur != nil {
		t.Fatal("README.md ends inside a fenced block")
	}
	return blocks
}

// readmeProgram returns the ```go block of the README's section, and the block that follows it ("" at the end).
func readmeProgram(t *testing.T, section string) (prog readmeBlock, next readmeBlock) {
	t.Helper()
	blocks := readmeBlocks(t)
	i := slices.IndexFunc(blocks, func(b readmeBlock) bool { return b.lang == "go" && b.section == section })
	if i < 0 {
		t.Fatalf("README.md has no ```go block under ## %s", section)
	}
	if i+1 < len(blocks) {
		next = blocks[i+1]
	}
	prog = blocks[i]
	if !strings.HasPrefix(prog.text, "package main\n") || !strings.Contains(prog.text, "\nfunc main() {") {
		t.Fatalf("the ```go block under ## %s is not a whole program (package main with func main):\n%s", section, prog.text)
	}
	return prog, next
}

// checkKept fails unless the file at path holds the README's program byte for byte.
func checkKept(t *testing.T, prog readmeBlock, path, why string) {
	t.Helper()
	kept, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(kept) != prog.text {
		t.Errorf("%s differs from the README's program under ## %s: copy the README's block into it, so that %s",
			path, prog.section, why)
	}
}

const (
	readmeHello = "A first program" // the section of the README's offline program, kept as examples/hello/main.go
	readmeAgent = "A working agent" // the section of the SDK program, kept as examples/sdk/readme/main.go
)

// The README opens with a program that runs offline: it is the README's first ```go block, kept byte for byte as
// examples/hello/main.go (which the test command's go vet ./... compiles), and it shows the library's main path:
// Load, the functions an LLM is offered, a call, and a signed webhook that wakes the task.
func TestReadmeHelloProgram(t *testing.T) {
	prog, next := readmeProgram(t, readmeHello)
	blocks := readmeBlocks(t)
	if first := blocks[slices.IndexFunc(blocks, func(b readmeBlock) bool { return b.lang == "go" })]; first.section != readmeHello {
		t.Errorf("the README's first program is under ## %s: it should start with the offline one", first.section)
	}
	for _, want := range []string{"tool.Load(", "task.Functions()", "task.InvokeFunction(", "res.Text()", "task.Deliver(",
		"tool.SinkFunc(", "webhook.SignStandard("} {
		if !strings.Contains(prog.text, want) {
			t.Errorf("the README's offline program does not use %s", want)
		}
	}
	if next.lang != "text" || next.section != readmeHello {
		t.Errorf("the README's offline program is not followed by its output in a ```text block")
	}
	checkKept(t, prog, "examples/hello/main.go", "go vet ./... compiles what the README shows")
}

// What the README says the offline program prints is what it prints: the stdout of `go run ./examples/hello` is
// the ```text block after the program.
func TestReadmeHelloOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("links a binary with the go command")
	}
	t.Parallel()
	_, want := readmeProgram(t, readmeHello)
	cmd := exec.Command("go", "run", "./examples/hello")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("go run ./examples/hello: %v\n%s", err, stderr.Bytes())
	}
	if string(got) != want.text {
		t.Errorf("go run ./examples/hello prints\n%s\nwhere the README shows\n%s", got, want.text)
	}
}

// The README's SDK program is kept byte for byte as examples/sdk/readme/main.go. That folder is in the examples/sdk
// module (which requires openai-go v3 and this library through a replace), where .ci/run's `go vet ./...` compiles
// it. The copy is checked here rather than built, so that the test command needs neither that module's downloads
// nor a second build on a new machine (a cold go vet of it took 9.5 min under load).
func TestReadmeAgentProgramVets(t *testing.T) {
	prog, _ := readmeProgram(t, readmeAgent)
	for _, want := range []string{"task.Functions()", "task.InvokeFunction(tool.ContextWithCallID(ctx, ", "res.Text()", "task.Close(ctx)"} {
		if !strings.Contains(prog.text, want) {
			t.Errorf("the README's SDK program does not use %s", want)
		}
	}
	checkKept(t, prog, "examples/sdk/readme/main.go", ".ci/run vets what the README shows")
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

// readmeBudget bounds the README's lines: 300 for the first release's surface (issue 39), plus the section each
// later issue adds, at most ~30 lines each, named here so that its growth is a reviewed line.
const readmeBudget = 300 +
	26 + // issue 40: Durable agent loops on Temporal
	30 + // issue 37: Servers behind OAuth
	27 + // issue 38: the gateway and its OAuth door, in MCP both ways
	6 + // issue 38: the gateway's upstream authorization and the stdio relay, in MCP both ways
	1 // issue 41: the throughput a store-mode replica reaches, and on what machine

// The README stays short enough to read in one sitting (details live in docs/), and keeps its table of contents
// ahead of the sections it lists.
func TestReadmeLength(t *testing.T) {
	src, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(src, []byte("\n")); n > readmeBudget {
		t.Errorf("README.md has %d lines; keep it at %d or fewer and move reference material to docs/", n, readmeBudget)
	}
	text := string(src)
	if contents, agent := strings.Index(text, "\n## Contents\n"), strings.Index(text, "\n## "+readmeAgent+"\n"); contents < 0 || contents > agent {
		t.Errorf("README.md has no table of contents (## Contents) ahead of ## %s", readmeAgent)
	}
}

// The README says how to get the module before anything else, and names the commands newcomers and CI start from
// (their details are in CONTRIBUTING.md).
func TestReadmeNamesTheCommands(t *testing.T) {
	src, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	if get, section := strings.Index(text, "go get github.com/commonagents-go/tool\n"), strings.Index(text, "\n## "); get < 0 || get > section {
		t.Error("README.md does not give `go get github.com/commonagents-go/tool` before its first section")
	}
	for _, cmd := range []string{"go run ./examples/hello", "go run ./examples/quickstart", "bash scripts/test.sh", "bash .ci/run"} {
		if !strings.Contains(text, cmd) {
			t.Errorf("README.md does not name %s", cmd)
		}
	}
}
