package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The README's longer tour, `go run ./examples/quickstart`, runs to the end: every task it starts passes
// NewTask's checks, and every step it shows still works.
func TestQuickstartRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	out, err := exec.Command("go", "run", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go run ./examples/quickstart: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "allow list after the calls") {
		t.Errorf("the quickstart stopped early:\n%s", out)
	}
}
